"""Frozen tool evidence: every tool's output for every paper, fetched once and stored as the ``tool_evidence``
dataset config (Parquet: bibcode, tool, payload as JSON, fetched_at), so that every model sees identical
evidence, no API key is needed to evaluate, and a run can be reproduced years later.

Inside a dataset folder the evidence lives in ``tool_evidence/`` and the dataset card declares it as the config
``tool_evidence`` (:data:`CONFIG_PATH`), so ``datasets.load_dataset(DIR_OR_REPO, "tool_evidence")`` reads it and
``scitaste publish dataset`` pushes it with the splits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scitaste_hf.agent.tools import NO_DATA, TOOL_NAMES, ToolBox, requested_bibcode, unavailable
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.output import write_bytes_atomic

FILE = "tool_evidence-00000-of-00001.parquet"
#: Where a dataset keeps its frozen evidence by default: ``DATA/tool_evidence``.
EVIDENCE_DIR = "tool_evidence"
#: The dataset config that holds the evidence, and its files relative to the dataset's root (the card's ``configs``).
CONFIG = "tool_evidence"
CONFIG_PATH = f"{EVIDENCE_DIR}/tool_evidence-*.parquet"
#: The card's text below its metadata (which declares the config).
CARD = """
# Frozen tool evidence of SciTaste-Bench

Each row is one tool's output (`payload`, JSON) for one paper (`bibcode`), fetched at `fetched_at` from {source}.
The nine tools return raw bibliometric evidence, never a score. {count} rows, {papers} papers.
"""


def freeze(toolbox: ToolBox, bibcodes: Iterable[str], out_dir: str | Path, *, source: str, workers: int = 8,
           progress=None) -> Path:
    """Run every tool on every paper and write the ``tool_evidence`` config to ``out_dir``.

    Parameters
    ----------
    toolbox : ToolBox
        The live tools (over the services or the mirror).
    bibcodes : iterable of str
        The papers; each must be known to ``toolbox``.
    out_dir : path
        Folder of the config (``README.md`` and the Parquet file); written atomically.
    source : str
        Where the evidence came from, recorded in the card.
    workers : int
        Papers fetched concurrently.
    progress : callable, optional
        Called with the number of papers done after each paper.

    Raises
    ------
    ScitasteError
        When a service fails (with a ``strict`` toolbox) or more than half of the tool calls fail: nothing is
        written then, and the clients' response cache keeps what was fetched for the next attempt.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import metadata_save

    papers = sorted(set(bibcodes))
    if not papers:
        raise ScitasteError("no papers to freeze evidence for")

    def one(bibcode: str) -> list[dict[str, Any]]:
        rows = []
        for tool in TOOL_NAMES:
            payload = toolbox.call(tool, {"bibcode": bibcode})
            rows.append({"bibcode": bibcode, "tool": tool, "payload": json.dumps(payload, sort_keys=True),
                         "fetched_at": datetime.now(UTC).isoformat(timespec="seconds")})
        return rows

    if workers < 1:
        raise ScitasteError(f"workers must be at least 1, got {workers}")
    rows: list[dict[str, Any]] = []
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for done, result in enumerate(pool.map(one, papers), start=1):
            rows.extend(result)
            if progress:
                progress(done)
    finally:
        # On a failure the papers not started yet are dropped instead of each failing in turn.
        pool.shutdown(cancel_futures=True)
    errors = [p["error"] for p in (json.loads(r["payload"]) for r in rows) if "error" in p]
    if errors and len(errors) * 2 > len(rows):
        raise ScitasteError(f"{len(errors)} of {len(rows)} tool calls failed (first: {errors[0]}); is the source the "
                            "one this dataset was built from? Nothing was written")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    buffer = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    write_bytes_atomic(out / FILE, buffer.getvalue().to_pybytes())
    card = out / "README.md"
    card.write_text(CARD.format(source=source, count=len(rows), papers=len(papers)), "utf-8")
    metadata_save(card, {"configs": [{"config_name": CONFIG, "data_files": [{"split": "train", "path": FILE}]}]})
    return out


def check_withheld(tool: str | None) -> str | None:
    """``tool`` as a tool to withhold: None or ``""`` (withhold nothing: None), else one of the nine tools.

    Raises
    ------
    InvalidInput
        For a name that is not a tool's.
    """
    if not tool:
        return None
    if tool not in TOOL_NAMES:
        raise InvalidInput(f"withhold: {tool!r} is not a tool; the tools are {', '.join(TOOL_NAMES)}")
    return tool


class FrozenToolBox:
    """The nine tools answered from frozen evidence (same interface as :class:`ToolBox`: ``call``).

    ``withheld`` names a tool whose evidence is kept back (per-tool attribution, docs/evaluation.md#withheld-tools):
    it answers every paper as a live tool whose service has no data on it (:data:`~scitaste_hf.agent.tools.NO_DATA`).
    """

    def __init__(self, evidence: Mapping[tuple[str, str], dict[str, Any]], withheld: str | None = None) -> None:
        self.evidence = dict(evidence)
        self.papers = {bibcode for bibcode, _ in self.evidence}
        self.withheld = check_withheld(withheld)

    def withholding(self, tool: str | None) -> FrozenToolBox:
        """The same evidence with ``tool``'s withheld (``None`` or ``""``: none withheld); shares the evidence.

        Raises
        ------
        InvalidInput
            For a name that is not a tool's.
        """
        tool = check_withheld(tool)
        if tool == self.withheld:
            return self
        box = FrozenToolBox.__new__(FrozenToolBox)
        box.evidence, box.papers, box.withheld = self.evidence, self.papers, tool
        return box

    @classmethod
    def load(cls, source: str | Path) -> FrozenToolBox:
        """Load frozen evidence (see :meth:`find`).

        Raises
        ------
        ScitasteError
            When ``source`` holds no evidence, or a Hub dataset cannot be fetched.
        """
        found = cls.find(source)
        if found is None:
            raise ScitasteError(f"no frozen evidence at {source} (neither {FILE} nor a dataset with a {CONFIG} "
                                "config); run `scitaste evidence freeze` first")
        return found

    @classmethod
    def find(cls, source: str | Path) -> FrozenToolBox | None:
        """Frozen evidence from ``source``, or None where it has none.

        Parameters
        ----------
        source : path or Hub id
            A folder written by :func:`freeze` (read directly); else a dataset, its folder in the Hub layout or a
            Hub dataset id, whose ``tool_evidence`` config is read with :func:`datasets.load_dataset` (a folder
            whose card predates that config is read from its ``tool_evidence/`` folder).

        Raises
        ------
        ScitasteError
            When ``source`` is a Hub id and the Hub cannot be reached (and nothing is cached), or has no such
            dataset.
        """
        import pyarrow.parquet as pq

        path = Path(source)
        if (path / FILE).is_file():
            return cls.from_rows(pq.read_table(path / FILE, columns=["bibcode", "tool", "payload"]).to_pylist())
        if path.is_dir():
            if (path / "README.md").is_file() and (rows := _config_rows(str(path))) is not None:
                return cls.from_rows(rows)
            return cls.find(path / EVIDENCE_DIR) if (path / EVIDENCE_DIR / FILE).is_file() else None
        # The same test of a Hub id as the records' loader, so that data_dir means one dataset for both.
        from scitaste_hf.net.hub import is_hub_id

        if not is_hub_id(source):
            return None
        rows = _config_rows(str(source))
        return None if rows is None else cls.from_rows(rows)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> FrozenToolBox:
        """Evidence from rows of the ``tool_evidence`` config (``bibcode``, ``tool``, ``payload`` as JSON)."""
        return cls({(r["bibcode"], r["tool"]): json.loads(r["payload"]) for r in rows})

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """The stored output; unknown tools, bad arguments and unknown papers answer ``{"error": ...}``, and so does
        the withheld tool (that its service has no data on the paper)."""
        bibcode = requested_bibcode(name, arguments, self.papers)
        if isinstance(bibcode, dict):
            return bibcode
        return unavailable(name, NO_DATA) if name == self.withheld else self.evidence[(bibcode, name)]


def _config_rows(source: str) -> list[dict[str, Any]] | None:
    """The rows of the ``tool_evidence`` config of the dataset ``source`` (folder or Hub id); None when the dataset
    declares no such config or it has no files."""
    from scitaste_hf.net.hub import load_dataset

    try:
        table = load_dataset(source, CONFIG, split="train", what=f"the tool evidence of {source}",
                             instead="pass evidence_dir=... a local evidence folder").data.table
    except ValueError:  # an unknown config, or one whose files are absent: the dataset has no evidence
        return None
    return table.select(["bibcode", "tool", "payload"]).to_pylist()
