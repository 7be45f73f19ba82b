"""What an index run over a snapshot is asked to do, whichever engine runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index.embed import Embedder
from scitaste_hf.snapshot.focal import Focal
from scitaste_hf.weights import Weights

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*$", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
#: The DuckDB engine's default memory limit: room beside it for the embeddings and the ANN index.
DEFAULT_MEMORY_LIMIT = "4GB"


def size_bytes(text: str) -> float:
    """The bytes of a size checked by :func:`memory_limit`."""
    m = _SIZE.match(text)
    return float(m.group(1)) * _UNITS[m.group(2).upper()]


def memory_limit(text: str) -> str:
    """Check a memory limit such as ``6GB`` or ``512MiB`` (at least 100 MB) and return it as DuckDB reads it.

    Raises
    ------
    ScitasteError
        On anything else.
    """
    m = _SIZE.match(text or "")
    if not m:
        raise ScitasteError(f"--memory-limit {text!r}: expected a size such as 6GB, 512MB or 2GiB")
    if size_bytes(text) < 100e6:
        raise ScitasteError(f"--memory-limit {text!r} is too small; give at least 100MB")
    return f"{m.group(1)}{m.group(2).upper().replace('I', 'i')}"


@dataclass
class IndexOptions:
    """Options of an index run.

    Attributes
    ----------
    focal : Focal
        Which works are the focal papers (the population the scores are relative to).
    format : str
        Snapshot format: ``auto``, ``jsonl`` or ``parquet``.
    memory_limit : str
        DuckDB's memory limit (checked by :func:`memory_limit`).
    threads : int
        Threads for DuckDB and FAISS (0: all cores).
    neighbours : str
        ``auto``, ``exact`` or ``ann`` (:func:`scitaste_hf.scale.neighbours.nearest_papers`).
    cd_window : int or None
        CD_t window in days; None counts every later citer.
    weights : mapping, DisciplineWeights or None
        The composite's weights; the packaged default when None. Per-discipline weights give each paper the vector
        of its discipline (:func:`scitaste_hf.scale.disciplines.paper_disciplines`).
    taxonomy : str or None
        The taxonomy (packaged name or file) whose cells map primary-topic subfields to disciplines, for
        per-discipline weights; the default when None.
    journal_table : str or None
        A journal table file for dimension G; the snapshot's sources (the open proxy) when None.
    embedder : Embedder or None
        Document embedder; WordLlama (the in-memory engine's default) when None.
    spark_master : str or None
        The Spark engine's master URL; ``local[*]`` when None, unless spark-submit started the run (its
        ``--master`` then holds).
    spark_conf : dict
        Spark settings (``spark.executor.memory``, ...) for the Spark engine, over its local-mode defaults.
    """

    focal: Focal
    format: str = "auto"
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    threads: int = 0
    neighbours: str = "auto"
    cd_window: int | None = None
    weights: Weights | None = None
    taxonomy: str | None = None
    journal_table: str | None = None
    embedder: Embedder | None = None
    spark_master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)


def spark_conf(pairs: list[str] | None) -> dict[str, str]:
    """Parse ``--spark-conf KEY=VALUE`` settings (``spark.executor.memory=8g``).

    Raises
    ------
    ScitasteError
        On a setting without ``=`` or whose key is not a ``spark.`` key.
    """
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().startswith("spark."):
            raise ScitasteError(f"--spark-conf {pair!r}: expected KEY=VALUE with a spark.* key, such as "
                                "spark.executor.memory=8g")
        out[key.strip()] = value.strip()
    return out
