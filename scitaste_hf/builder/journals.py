"""The journal table of a build (docs/index-dimensions.md#journal-table): a licensed table given with
``--journal-table FILE``, else the simulated world's synthetic table when the build reads a mirror, else the open
OpenAlex proxy, which has no JCR quartiles or CAS zones.

The mirror's table is fetched once and kept in the work directory, so a re-run from the same work directory asks
for nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from scitaste_hf.errors import ScitasteError, first_line

#: The file a mirror's journal table is kept in, in the work directory.
CACHED = "journal-table.csv"
#: What a build without JCR quartiles and CAS zones says about journal impact.
PARTITIONS_MISSING = ("JCR quartiles and CAS zones missing (no --journal-table): journal impact is 0.70 x the "
                      "impact-factor percentile alone, at most 70 of 100")


def read_licensed(path: str | Path):
    """A ``--journal-table`` file as a :class:`~scitaste_hf.index.JournalTable` (one-line error when unusable)."""
    from scitaste_hf.index import JournalTable

    return JournalTable.read(path)


def mirror_table(mirror_url: str, work: Path, max_retries: int = 5):
    """The simulated world's journal table from the mirror (kept in ``work``), or None when the mirror serves
    none (the recorded world). Asked like every other request of the build
    (:class:`~scitaste_hf.sources.transport.Transport`: timeouts, ``max_retries`` retries with backoff, one-line
    errors)."""
    from scitaste_hf.index import JournalTable
    from scitaste_hf.output import write_bytes_atomic
    from scitaste_hf.sources.endpoints import JOURNAL_TABLE_PATH
    from scitaste_hf.sources.options import ClientOptions
    from scitaste_hf.sources.transport import Transport

    label = "synthetic journal table of the simulated world (not JCR/CAS data)"
    cached = work / CACHED
    if not cached.is_file():
        options = ClientOptions(base_url=mirror_url, timeout=60.0, max_retries=max_retries)
        transport = Transport("the mirror's journal table", options, expect="text")
        try:
            answer = transport.request("GET", JOURNAL_TABLE_PATH, not_found_ok=True)
        finally:
            transport.close()
        if answer.status == 404:
            return None
        work.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(cached, answer.data.encode("utf-8"))
        try:
            return JournalTable.read(cached, label=label)
        except ScitasteError as exc:  # kept, it would fail every later build from this work directory
            cached.unlink(missing_ok=True)
            raise ScitasteError(f"the mirror {mirror_url} served a journal table that cannot be read "
                                f"({first_line(exc)}); nothing was kept") from None
    return JournalTable.read(cached, label=label)


def digest(table) -> str:
    """A short fingerprint of a table's entries (None: the OpenAlex proxy)."""
    if table is None:
        return "openalex-proxy"
    text = repr([(e.issn, e.name, e.impact_factor, e.jcr_quartile, e.cas_zone) for e in table.entries])
    return hashlib.sha256(text.encode()).hexdigest()[:12]
