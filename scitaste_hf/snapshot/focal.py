"""Which works of a snapshot are the focal papers: all of them, those listed in a file, or those an
OpenAlex-style filter selects (``publication_year:2015``, ``type:article,cited_by_count:>10``).

A filter is evaluated the same way in SQL (the DuckDB and Spark engines) and in Python (the in-memory engine);
both read the fields of :data:`FILTER_FIELDS` from a work's record. A work whose field is unknown is never
selected by a clause on that field, negated or not.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError

#: Filter key -> (column of the flat works table, kind of value).
FILTER_FIELDS: dict[str, tuple[str, str]] = {
    "publication_year": ("year", "number"),
    "from_publication_date": ("publication_date", "from"),
    "to_publication_date": ("publication_date", "to"),
    "cited_by_count": ("citation_count", "number"),
    "type": ("type", "text"),
    "primary_topic.field.id": ("field_id", "id"),
    "primary_topic.subfield.id": ("subfield_id", "id"),
    "primary_location.source.issn": ("issn_l", "text"),
    "openalex": ("id", "id"),
}
_NUMBER = re.compile(r"^(?:(\d+)-(\d+)|([<>])(\d+)|(\d+))$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def short_id(value: str) -> str:
    """The last segment of an OpenAlex id or URL (``W123``, ``26`` of ``https://openalex.org/fields/26``)."""
    return value.strip().rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Clause:
    """One ``key:value`` of a filter: the column, whether negated, and the alternatives (op, value) OR-ed."""

    column: str
    negate: bool
    alternatives: tuple[tuple[str, Any], ...]


def _alternative(key: str, kind: str, text: str) -> tuple[str, Any]:
    if kind == "number":
        m = _NUMBER.match(text)
        if not m:
            raise ScitasteError(f"filter {key}:{text}: expected N, N-M, >N or <N")
        if m.group(1):
            return "between", (int(m.group(1)), int(m.group(2)))
        if m.group(3):
            return m.group(3), int(m.group(4))
        return "=", int(m.group(5))
    if kind in ("from", "to"):
        if not _DATE.match(text):
            raise ScitasteError(f"filter {key}:{text}: expected a date YYYY-MM-DD")
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise ScitasteError(f"filter {key}:{text}: not a valid date") from None
        return (">=" if kind == "from" else "<="), day
    if kind == "id":
        return "=", short_id(text)
    return "=", text


@dataclass(frozen=True)
class Focal:
    """The focal selection: ``all``, a set of ids, or filter clauses (AND-ed)."""

    spec: str
    ids: frozenset[str] | None = None
    clauses: tuple[Clause, ...] = ()

    @property
    def key(self) -> str:
        """What identifies the selection for resuming: the spec, and for an id file its ids."""
        if self.ids is None:
            return self.spec
        return "ids:" + hashlib.sha256("\n".join(sorted(self.ids)).encode()).hexdigest()

    def sql(self) -> str:
        """A SQL boolean expression over the flat works table's columns (ANSI: runs on DuckDB and Spark); ids
        are matched against a table ``focal_ids(id)``."""
        if self.ids is not None:
            return "id IN (SELECT id FROM focal_ids)"
        if not self.clauses:
            return "TRUE"
        parts = []
        for clause in self.clauses:
            alts = []
            for op, value in clause.alternatives:
                if isinstance(value, date):
                    literal = f"DATE '{value.isoformat()}'"
                elif isinstance(value, str):
                    literal = "'" + value.replace("'", "''") + "'"
                else:
                    literal = str(value)
                if op == "between":
                    alts.append(f"{clause.column} BETWEEN {value[0]} AND {value[1]}")
                else:
                    alts.append(f"{clause.column} {op} {literal}")
            body = " OR ".join(alts)
            # An unknown value selects nothing, negated or not (SQL's NOT NULL is NULL).
            parts.append(f"({clause.column} IS NOT NULL AND {'NOT ' if clause.negate else ''}({body}))")
        return " AND ".join(parts)

    def matches(self, row: dict[str, Any]) -> bool:
        """Whether a work is focal, from its flat fields (the columns of :data:`FILTER_FIELDS`)."""
        if self.ids is not None:
            return row["id"] in self.ids
        for clause in self.clauses:
            value = row.get(clause.column)
            if value is None:
                return False
            hit = False
            for op, target in clause.alternatives:
                if op == "between":
                    hit |= target[0] <= value <= target[1]
                elif op == "=":
                    hit |= value == target
                elif op in (">", ">="):
                    hit |= value > target if op == ">" else value >= target
                else:
                    hit |= value < target if op == "<" else value <= target
            if hit == clause.negate:
                return False
        return True


def parse_focal(spec: str) -> Focal:
    """Parse ``--focal``: ``all``, a file of OpenAlex work ids (one a line, ``#`` comments), or a filter.

    Raises
    ------
    ScitasteError
        On an empty or unreadable id file (one that is not UTF-8) or a bad filter (an unknown key, a malformed value).
    """
    spec = spec.strip()
    if spec == "all":
        return Focal(spec)
    path = Path(spec)
    if path.is_file():
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScitasteError(f"the focal id file {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
                                ) from None
        except OSError as exc:
            raise ScitasteError(f"cannot read the focal id file {path}: {exc.strerror or exc}") from None
        ids = frozenset(short_id(line.split("#", 1)[0]) for line in text.splitlines() if line.split("#", 1)[0].strip())
        if not ids:
            raise ScitasteError(f"the focal id file {path} lists no work id")
        return Focal(spec, ids=ids)
    clauses = []
    for part in spec.split(","):
        key, sep, value = part.partition(":")
        key = key.strip()
        if not sep or not value.strip():
            raise ScitasteError(f"--focal {spec!r}: not a file, 'all', or a filter key:value[,key:value...]")
        if key not in FILTER_FIELDS:
            raise ScitasteError(f"--focal: unknown filter key {key!r}; known: {', '.join(FILTER_FIELDS)}")
        column, kind = FILTER_FIELDS[key]
        value = value.strip()
        negate = value.startswith("!")
        alts = tuple(_alternative(key, kind, v.strip()) for v in value.lstrip("!").split("|"))
        clauses.append(Clause(column, negate, alts))
    return Focal(spec, clauses=tuple(clauses))
