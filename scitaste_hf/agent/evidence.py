"""Frozen tool evidence: every tool's output for every paper, fetched once and stored as the ``tool_evidence``
dataset config (Parquet: bibcode, tool, payload as JSON, fetched_at), so that every model sees identical
evidence, no API key is needed to evaluate, and a run can be reproduced years later.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scitaste_hf.agent.tools import TOOL_NAMES, ToolBox, requested_bibcode
from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import write_bytes_atomic

FILE = "tool_evidence-00000-of-00001.parquet"
#: Where a dataset keeps its frozen evidence by default: ``DATA/tool_evidence``.
EVIDENCE_DIR = "tool_evidence"
CARD = """---
configs:
- config_name: tool_evidence
  data_files:
  - split: train
    path: {file}
---

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
    (out / "README.md").write_text(CARD.format(file=FILE, source=source, count=len(rows), papers=len(papers)),
                                   "utf-8")
    return out


class FrozenToolBox:
    """The nine tools answered from frozen evidence (same interface as :class:`ToolBox`: ``call``)."""

    def __init__(self, evidence: Mapping[tuple[str, str], dict[str, Any]]) -> None:
        self.evidence = dict(evidence)
        self.papers = {bibcode for bibcode, _ in self.evidence}

    @classmethod
    def load(cls, folder: str | Path) -> FrozenToolBox:
        """Load the ``tool_evidence`` config written by :func:`freeze`."""
        import pyarrow.parquet as pq

        path = Path(folder) / FILE
        if not path.is_file():
            raise ScitasteError(f"no frozen evidence at {path}; run `scitaste evidence freeze` first")
        table = pq.read_table(path, columns=["bibcode", "tool", "payload"]).to_pydict()
        return cls({(b, t): json.loads(p) for b, t, p in zip(table["bibcode"], table["tool"], table["payload"])})

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """The stored output; unknown tools, bad arguments and unknown papers answer ``{"error": ...}``."""
        bibcode = requested_bibcode(name, arguments, self.papers)
        return bibcode if isinstance(bibcode, dict) else self.evidence[(bibcode, name)]
