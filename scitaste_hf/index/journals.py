"""Journal data for dimension G (docs/index-dimensions.md#g-journal-impact): a pluggable table of
(issn, name, impact_factor, jcr_quartile, cas_zone)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import JOURNAL_TIERS

#: Score of JCR quartile Q1..Q4 and of CAS zone 1..4 (docs/index-dimensions.md#g-journal-impact); a missing
#: one scores 0.
TIER_SCORES: tuple[float, ...] = (100.0, 75.0, 50.0, 25.0)
#: The label of the open table of :meth:`JournalTable.from_openalex_sources`.
OPENALEX_PROXY_LABEL = "OpenAlex 2yr_mean_citedness (impact-factor proxy; no JCR/CAS data)"


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class JournalEntry:
    """One journal. ``jcr_quartile`` is ``"Q1"``..``"Q4"`` and ``cas_zone`` 1..4, or None when unknown."""

    name: str | None
    issn: str | None = None
    impact_factor: float | None = None
    jcr_quartile: str | None = None
    cas_zone: int | None = None


class JournalTable:
    """Journals looked up by ISSN or, failing that, by name (case and spacing ignored).

    Parameters
    ----------
    entries : iterable of JournalEntry or of mappings with the same keys
        The journals. Two entries may not share an ISSN or a name.
    label : str
        Where the figures come from, shown wherever journal impact is reported.
    proxy : bool
        True when ``impact_factor`` is a stand-in for the Journal Impact Factor (see
        :meth:`from_openalex_sources`).

    Raises
    ------
    ScitasteError
        On a bad quartile, zone or impact factor, or a duplicate ISSN or name.
    """

    def __init__(self, entries: Iterable[JournalEntry | Mapping], *, label: str = "custom", proxy: bool = False):
        self.entries: list[JournalEntry] = []
        self._index: dict[str, int] = {}
        for raw in entries:
            entry = raw if isinstance(raw, JournalEntry) else JournalEntry(**raw)
            if entry.jcr_quartile is not None and entry.jcr_quartile not in JOURNAL_TIERS:
                raise ScitasteError(f"journal {entry.name!r}: jcr_quartile must be Q1..Q4 or null, "
                                    f"got {entry.jcr_quartile!r}")
            if entry.cas_zone is not None and entry.cas_zone not in (1, 2, 3, 4):
                raise ScitasteError(f"journal {entry.name!r}: cas_zone must be 1..4 or null, got {entry.cas_zone!r}")
            if entry.impact_factor is not None and not (np.isfinite(entry.impact_factor) and entry.impact_factor >= 0):
                raise ScitasteError(f"journal {entry.name!r}: impact_factor must be a finite number >= 0")
            for key in {_key(k) for k in (entry.issn, entry.name) if k}:
                if key in self._index:
                    raise ScitasteError(f"journal table lists {key!r} twice")
                self._index[key] = len(self.entries)
            self.entries.append(entry)
        self.label = label
        self.proxy = proxy

    @classmethod
    def from_openalex_sources(cls, sources: Iterable[Mapping]) -> JournalTable:
        """The default open table, built from OpenAlex source objects.

        JCR quartiles and CAS zones are proprietary, so they stay unknown (scoring 0); the impact factor is
        the proxy ``summary_stats.2yr_mean_citedness`` and the table labels itself as a proxy.

        Parameters
        ----------
        sources : iterable of mapping
            OpenAlex source objects (``issn_l``, ``display_name``, ``summary_stats``).

        Returns
        -------
        JournalTable
        """
        entries = [
            JournalEntry(
                name=src.get("display_name"),
                issn=src.get("issn_l"),
                impact_factor=(src.get("summary_stats") or {}).get("2yr_mean_citedness"),
            )
            for src in sources
        ]
        return cls(entries, label=OPENALEX_PROXY_LABEL, proxy=True)

    @classmethod
    def read(cls, path: str | Path, *, label: str | None = None, proxy: bool = False) -> JournalTable:
        """Load a journal table from a CSV or Parquet file with columns issn, name, impact_factor,
        jcr_quartile and cas_zone (each may be empty; at least one of issn and name per row).

        Parameters
        ----------
        path : str or path-like
            ``.csv`` or ``.parquet`` file.
        label : str, optional
            Where the figures come from; the file name when None.
        proxy : bool
            Whether ``impact_factor`` is a stand-in for the Journal Impact Factor.

        Returns
        -------
        JournalTable

        Raises
        ------
        ScitasteError
            On a missing or unreadable file, a missing column, or a bad entry.
        """
        import pyarrow as pa
        import pyarrow.csv
        import pyarrow.parquet

        path = Path(path)
        columns = {"issn": pa.string(), "name": pa.string(), "impact_factor": pa.float64(),
                   "jcr_quartile": pa.string(), "cas_zone": pa.int64()}
        try:
            if path.suffix.lower() == ".csv":
                options = pyarrow.csv.ConvertOptions(column_types=columns, strings_can_be_null=True)
                table = pyarrow.csv.read_csv(path, convert_options=options)
            else:
                table = pyarrow.parquet.read_table(path)
        except FileNotFoundError:
            raise ScitasteError(f"journal table not found: {path}") from None
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScitasteError(f"journal table {path} cannot be read: {exc}") from None
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ScitasteError(f"journal table {path} lacks column(s) {', '.join(missing)}")
        rows = table.select(list(columns)).cast(pa.schema(columns)).to_pylist()
        for i, row in enumerate(rows):
            if not (row["issn"] or row["name"]):
                raise ScitasteError(f"journal table {path}: row {i + 1} has neither an issn nor a name")
        return cls(rows, label=label or path.name, proxy=proxy)

    def lookup(self, key: str | None) -> JournalEntry | None:
        """The entry whose ISSN or name is ``key``, or None.

        Parameters
        ----------
        key : str or None
            An ISSN or a journal name (case and spacing ignored); None finds nothing.
        """
        if not key:
            return None
        found = self._index.get(_key(key))
        return None if found is None else self.entries[found]
