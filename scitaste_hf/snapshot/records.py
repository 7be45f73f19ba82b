"""The record contract of a snapshot: which fields of a work (and of a source) every engine reads, of which type,
and what is refused; and the one streamed reader of a data file that applies it (docs/scale.md#the-record-contract).

Every engine reads records through :func:`read_part`: the in-memory engine uses its records, and the DuckDB and
Spark engines run it over each data file before their own reader parses the file, so that the three accept and
refuse the same records. The rule, for each field of :data:`WORK_FIELDS`:

* missing or ``null``: unknown (the field's default), except ``id``, which every work must have;
* of the field's kind: read (an object's other keys are ignored, as are the record's other fields);
* anything else, a ``null`` inside a list included: the file is refused, with one line naming the file, the line
  (a Parquet file: the row) and the field.

A line that is not a JSON object, is not UTF-8, or is longer than :data:`MAX_RECORD_BYTES` is refused the same
way. Blank lines (JSON whitespace only) are skipped and counted. Lines are streamed in chunks, so a file that
inflates to one huge line, or to billions of blank lines, costs its size in time and :data:`MAX_RECORD_BYTES` in
memory.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import date
from itertools import chain
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError, short_repr
from scitaste_hf.snapshot.store import is_remote, location

#: The longest line (record) of a JSON Lines data file, in bytes. OpenAlex's largest works (thousands of authors
#: with their institutions) are a few MB; a longer line is refused before it is held in memory.
MAX_RECORD_BYTES = 64 * 2**20
#: The contract's version: a stage read under another one is read again.
CONTRACT = 1
#: Bytes decompressed at a time.
CHUNK_BYTES = 4 * 2**20

#: Kinds of value beyond the SQL types, each stored as one of them (``Dialect.column_type``).
STORAGE = {"work_id": "text", "date": "text", "year": "int", "count": "long", "abstract": "json"}

#: The fields read from each work record, with their nesting (only what the index needs): a kind, a list of
#: one spec, or a dict of fields. Parquet data files carry these columns natively; the kinds:
#: ``text`` a string, ``work_id`` an OpenAlex work id (``W`` and digits, or its https://openalex.org/ URL),
#: ``date`` a calendar date ``YYYY-MM-DD``, ``year`` an integer 1-9999, ``count`` an integer 0 .. 2^63-1,
#: ``int``/``long`` a 32/64-bit signed integer, ``double`` a number, ``abstract`` an object of word -> list of
#: positions (integers >= 0; in Parquet its JSON text).
WORK_FIELDS: dict[str, Any] = {
    "id": "work_id",
    "title": "text",
    "display_name": "text",
    "publication_date": "date",
    "publication_year": "year",
    "type": "text",
    "cited_by_count": "count",
    "referenced_works": ["work_id"],
    "primary_location": {"source": {"issn_l": "text", "display_name": "text"}},
    "primary_topic": {"field": {"id": "text", "display_name": "text"},
                      "subfield": {"id": "text", "display_name": "text"}},
    "topics": [{"score": "double", "field": {"display_name": "text"}, "subfield": {"display_name": "text"}}],
    "concepts": [{"score": "double"}],
    "authorships": [{"countries": ["text"]}],
    "abstract_inverted_index": "abstract",
}
#: The fields read from each source record (dimension G's open journal table).
SOURCE_FIELDS: dict[str, Any] = {"issn_l": "text", "display_name": "text",
                                 "summary_stats": {"2yr_mean_citedness": "double"}}
#: Fields a record must have (not missing, not null).
REQUIRED = frozenset({"id"})

_WORK_ID = re.compile(r"(?:https://openalex\.org/)?W[0-9]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_WHITESPACE = b" \t\r\n"  # JSON's
_BLANK = re.compile(rb"[ \t\r\n]*")


class _Invalid(Exception):
    """A value outside the contract: ``path`` (the field, filled in on the way out) and what it should be."""

    def __init__(self, expected: str, value: Any) -> None:
        super().__init__(expected)
        self.expected, self.value, self.path = expected, value, ""

    def within(self, name: str) -> _Invalid:
        self.path = name + ("" if not self.path else self.path if self.path.startswith("[") else "." + self.path)
        return self


_INT64 = (-(2**63), 2**63 - 1)
#: Each leaf kind: (what it must be, the range of an integer kind or the pattern a string must match).
_LEAVES: dict[str, tuple[str, Any]] = {
    "text": ("a string", None),
    "work_id": ("an OpenAlex work id (W and digits, or its https://openalex.org/ URL)", _WORK_ID),
    "date": ("a date YYYY-MM-DD", _DATE),
    "year": ("a year (an integer 1-9999)", (1, 9999)),
    "count": ("a count (an integer >= 0)", (0, _INT64[1])),
    "int": ("a 32-bit integer", (-(2**31), 2**31 - 1)),
    "long": ("a 64-bit integer", _INT64),
    "double": ("a number", None),
    "abstract": ("an object of word -> list of positions (integers >= 0)", None),
}


def _leaf_ok(kind: str, value: Any) -> bool:
    if kind == "double":
        return type(value) in (int, float)
    if kind == "abstract":
        if type(value) is not dict or not set(map(type, value.values())) <= {list}:
            return False
        positions = list(chain.from_iterable(value.values()))
        return set(map(type, positions)) <= {int} and (not positions or min(positions) >= 0)
    rule = _LEAVES[kind][1]
    if isinstance(rule, tuple):
        return type(value) is int and rule[0] <= value <= rule[1]
    if type(value) is not str:
        return False
    if kind == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
    return rule is None or rule.fullmatch(value) is not None


def _leaves_ok(kind: str, values: list) -> bool:
    """Whether every element of a list is of a leaf kind, in C loops for the common kinds (a work's references)."""
    if kind == "text":
        return set(map(type, values)) <= {str}
    if kind == "work_id":
        return set(map(type, values)) <= {str} and all(map(_WORK_ID.fullmatch, values))
    return all(_leaf_ok(kind, v) for v in values)


def _compile(spec: Any) -> Callable[[Any], None]:
    """A checker of a non-null value of ``spec``: it raises :class:`_Invalid` when the value is not of it."""
    if isinstance(spec, dict):
        fields = [(name, _compile(sub)) for name, sub in spec.items()]

        def check_object(value: Any) -> None:
            if type(value) is not dict:
                raise _Invalid("an object", value)
            for name, check in fields:
                item = value.get(name)
                if item is not None:
                    try:
                        check(item)
                    except _Invalid as exc:
                        raise exc.within(name) from None
        return check_object
    if isinstance(spec, list):
        item_spec = spec[0]
        check_item = _compile(item_spec)

        def check_list(value: Any) -> None:
            if type(value) is not list:
                raise _Invalid("a list", value)
            if isinstance(item_spec, str) and _leaves_ok(item_spec, value):
                return
            for k, item in enumerate(value):
                try:
                    if item is None:
                        raise _Invalid("not null", item)
                    check_item(item)
                except _Invalid as exc:
                    raise exc.within(f"[{k}]") from None
        return check_list

    def check_leaf(value: Any) -> None:
        if not _leaf_ok(spec, value):
            raise _Invalid(_LEAVES[spec][0], value)
    return check_leaf


def _accepts(spec: Any) -> Callable[[Any], bool]:
    """Whether a record is of ``spec``, as one generated function: the checker of :func:`_compile` costs a call
    per nested object and three times the time; this one decides, and that one, run on a refused record only,
    says where it fails. Both follow :data:`_LEAVES`."""
    lines = ["def accepts(v0):"]

    def emit(spec: Any, var: str, depth: int, indent: str) -> None:
        if isinstance(spec, dict):
            lines.append(f"{indent}if type({var}) is not dict: return False")
            for name, sub in spec.items():
                item = f"v{depth + 1}"
                lines.append(f"{indent}{item} = {var}.get({name!r})")
                lines.append(f"{indent}if {item} is not None:")
                emit(sub, item, depth + 1, indent + "    ")
        elif isinstance(spec, list):
            lines.append(f"{indent}if type({var}) is not list: return False")
            if spec[0] == "text":
                lines.append(f"{indent}if not set(map(type, {var})) <= _STR: return False")
                return
            if isinstance(spec[0], str):
                lines.append(f"{indent}if not _leaves_ok({spec[0]!r}, {var}): return False")
                return
            item = f"v{depth + 1}"
            lines.append(f"{indent}for {item} in {var}:")
            lines.append(f"{indent}    if {item} is None: return False")
            emit(spec[0], item, depth + 1, indent + "    ")
        else:
            rule = _LEAVES[spec][1]
            if spec == "text":
                lines.append(f"{indent}if type({var}) is not str: return False")
            elif spec == "double":
                lines.append(f"{indent}if type({var}) is not float and type({var}) is not int: return False")
            elif isinstance(rule, tuple):
                lines.append(f"{indent}if type({var}) is not int or not {rule[0]} <= {var} <= {rule[1]}: return False")
            else:
                lines.append(f"{indent}if not _leaf_ok({spec!r}, {var}): return False")
    emit(spec, "v0", 0, "    ")
    lines.append("    return True")
    scope = {"_leaf_ok": _leaf_ok, "_leaves_ok": _leaves_ok, "_STR": {str}}
    exec("\n".join(lines), scope)  # code generated from the field specs above, no input in it
    return scope["accepts"]


_COMPILED = tuple((fields, _accepts(fields), _compile(fields)) for fields in (WORK_FIELDS, SOURCE_FIELDS))


def check_record(record: Any, fields: Mapping[str, Any] = WORK_FIELDS) -> str | None:
    """What is wrong with one record under the contract (one clause), or None when it is accepted.

    Parameters
    ----------
    record : Any
        A parsed JSON line, or a Parquet row with ``abstract_inverted_index`` parsed from its JSON text.
    fields : mapping
        :data:`WORK_FIELDS` or :data:`SOURCE_FIELDS`.
    """
    if type(record) is not dict:
        return f"the record is not a JSON object but {type(record).__name__}"
    for name in REQUIRED & fields.keys():
        if record.get(name) is None:
            return f"the record has no {name}"
    accepts, explain = next(((a, e) for known, a, e in _COMPILED if known is fields), None) or (
        _accepts(dict(fields)), _compile(dict(fields)))
    if accepts(record):
        return None
    try:
        explain(record)
    except _Invalid as exc:
        return f"{exc.path} must be {exc.expected}, not {short_repr(exc.value)}"
    return "a field is not of its kind"  # the two checkers disagree: refused, as the deciding one says


def short_id(value: str | None) -> str | None:
    """The last segment of an id or URL (``W123`` of ``https://openalex.org/W123``), as the SQL reads it."""
    return None if value is None else value.rsplit("/", 1)[-1]


def _skip_blank(data: bytes, pos: int) -> int:
    """The position of the first byte at or after ``pos`` that is not JSON whitespace (``len(data)`` if none).
    A run of blanks is passed in growing slices that ``bytes.translate`` empties at C speed; the regular
    expression, ten times slower, only scans the slice where the run ends."""
    step = 4096
    while pos < len(data):
        if data[pos] not in _WHITESPACE:
            return pos
        piece = data[pos:pos + step]
        if piece.translate(None, _WHITESPACE):
            return pos + _BLANK.match(piece).end()
        pos += len(piece)
        step = min(step * 2, 1 << 16)
    return len(data)


def _newlines(data: bytes) -> int:
    """How many newlines ``data`` holds: NumPy counts a dense run three times faster than ``bytes.count``."""
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))


class ReadCounts:
    """What reading data files skipped: ``blank_lines``."""

    def __init__(self) -> None:
        self.blank_lines = 0


def _inflate(path: Path) -> Iterator[bytes]:
    """A gzip file's content in pieces of at most :data:`CHUNK_BYTES` (every member of a multi-member file, zero
    padding between members skipped, as the ``gzip`` module does); zlib checks each member's CRC. Five times
    faster than the ``gzip`` module's reader."""
    with path.open("rb") as fh:
        magic = fh.read(2)
        if magic and magic != b"\x1f\x8b":
            raise OSError(f"Not a gzipped file ({magic!r})")  # the gzip module's words
        fh.seek(0)
        inflater, fed = zlib.decompressobj(wbits=31), False
        while raw := fh.read(2**20):
            while True:
                if not fed:
                    raw = raw.lstrip(b"\0")
                    if not raw:
                        break
                fed = True
                out = inflater.decompress(raw, CHUNK_BYTES)
                if out:
                    yield out
                if inflater.eof:
                    raw = inflater.unused_data
                    inflater, fed = zlib.decompressobj(wbits=31), False
                    continue
                raw = inflater.unconsumed_tail
                if not raw and len(out) < CHUNK_BYTES:  # this input is used up, and no output is pending
                    break
        if fed and not inflater.eof:
            raise EOFError("the gzip file ends before its end-of-stream marker: it is truncated")


def _lines(path: Path, counts: ReadCounts) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of each non-blank line of a gzip JSON Lines file, streamed chunk by chunk: a line is
    held whole only up to :data:`MAX_RECORD_BYTES`, and blank lines are counted by a scan, never split out."""
    line_no, pending, pending_size = 1, [], 0
    chunks = _inflate(path)
    while True:
        chunk = next(chunks, b"")
        if chunk:
            cut = chunk.rfind(b"\n") + 1
            if not cut:  # still inside one line
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size > MAX_RECORD_BYTES:
                    raise _TooLong(line_no)
                continue
            data = b"".join((*pending, chunk[:cut])) if pending else chunk[:cut]
            rest = chunk[cut:]
        else:
            data, rest = b"".join(pending), b""
        pending, pending_size = [rest], len(rest)
        first, newlines = line_no, _newlines(data)
        at, found, pos = 0, 0, _skip_blank(data, 0)
        while pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            line_no += data.count(b"\n", at, pos)
            at = pos
            found += 1
            if end - pos > MAX_RECORD_BYTES:
                raise _TooLong(line_no)
            yield line_no, data[pos:end]
            pos = _skip_blank(data, end)
        line_no = first + newlines
        # every line of data is found or blank; only the file's last line may lack its newline
        counts.blank_lines += newlines + (1 if data and not data.endswith(b"\n") else 0) - found
        if pending_size > MAX_RECORD_BYTES:
            raise _TooLong(line_no)
        if not chunk:
            return


class _TooLong(Exception):
    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.line_no = line_no


def _jsonl(path: Path, fields: Mapping[str, Any], counts: ReadCounts) -> Iterator[dict]:
    import orjson

    try:
        for line_no, line in _lines(path, counts):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ScitasteError(f"reading the snapshot failed: {path}: line {line_no} is not JSON: "
                                    f"{str(exc).split(':')[0]}") from None
            problem = check_record(record, fields)
            if problem:
                raise ScitasteError(f"reading the snapshot failed: {path}: line {line_no}: {problem}")
            yield record
    except _TooLong as exc:
        raise ScitasteError(f"reading the snapshot failed: {path}: line {exc.line_no} is longer than "
                            f"{MAX_RECORD_BYTES:,} bytes, the longest record read (MAX_RECORD_BYTES)") from None
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt part
        raise ScitasteError(f"reading the snapshot failed: {path}: {exc}") from None


def _arrow_matches(kind: Any, spec: Any) -> bool:
    """Whether an Arrow type holds a field of ``spec`` the way the SQL reads it."""
    import pyarrow as pa

    if isinstance(spec, dict):
        return pa.types.is_struct(kind) and all(
            kind.get_field_index(name) >= 0 and _arrow_matches(kind.field(name).type, sub)
            for name, sub in spec.items())
    if isinstance(spec, list):
        return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _arrow_matches(kind.value_type, spec[0])
    storage = STORAGE.get(spec, spec)
    if storage in ("text", "json"):
        return pa.types.is_string(kind) or pa.types.is_large_string(kind)
    if storage == "double":
        return pa.types.is_floating(kind) or pa.types.is_integer(kind)
    return pa.types.is_integer(kind)


def _parquet(path: Path, fields: Mapping[str, Any]) -> Iterator[dict]:
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    def refuse(where: str) -> ScitasteError:
        return ScitasteError(f"reading the snapshot failed: {path}: {where}")

    try:
        handle = pq.ParquetFile(path.open("rb") if is_remote(path) else path)
        schema = handle.schema_arrow
        for name, spec in fields.items():
            if schema.get_field_index(name) < 0:
                raise refuse(f"it has no column {name}")
            if not _arrow_matches(schema.field(name).type, spec):
                raise refuse(f"its column {name} is of type {schema.field(name).type}, which does not hold the "
                             "record's field (docs/scale.md#the-record-contract)")
        row_no = 0
        for batch in handle.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                row_no += 1
                text = row.get("abstract_inverted_index")
                if isinstance(text, str):
                    try:
                        row["abstract_inverted_index"] = orjson.loads(text)
                    except orjson.JSONDecodeError:
                        raise refuse(f"row {row_no}: abstract_inverted_index is not JSON text") from None
                problem = check_record(row, fields)
                if problem:
                    raise refuse(f"row {row_no}: {problem}")
                yield row
    except (OSError, pa.ArrowException) as exc:  # a truncated or corrupt file
        raise refuse(f"not a readable Parquet file: {exc}") from None


def read_part(path: str | Path, fmt: str, fields: Mapping[str, Any] = WORK_FIELDS,
              counts: ReadCounts | None = None) -> Iterator[dict]:
    """Every record of one data file that the contract accepts, as OpenAlex publishes it (a Parquet row: its
    contract's columns, ``abstract_inverted_index`` parsed back from its JSON text).

    Parameters
    ----------
    path : str or path-like
        A gzip JSON Lines file (``fmt`` ``jsonl``) or a Parquet file (``parquet``); local or in a store
        (:func:`scitaste_hf.snapshot.store.location`).
    fmt : {"jsonl", "parquet"}
    fields : mapping
        :data:`WORK_FIELDS` (works) or :data:`SOURCE_FIELDS` (sources).
    counts : ReadCounts, optional
        Incremented by what is skipped (blank lines).

    Raises
    ------
    ScitasteError
        At the first record the contract refuses, or a damaged file: one line naming the file and the line
        (or row), raised before the next record is yielded.
    """
    counts = counts if counts is not None else ReadCounts()
    path = location(path)
    if fmt == "jsonl":
        return _jsonl(path, fields, counts)
    return _parquet(path, fields)


def json_lines(path: str | Path) -> Iterator[bytes]:
    """The non-blank lines of a gzip JSON Lines data file (local or in a store), streamed as :func:`read_part`
    streams them, without parsing: what the Spark engine's executors hand Spark's JSON parser for a file that
    Spark's own readers cannot reach (:meth:`scitaste_hf.scale.spark.SparkIndex.read`)."""
    return (line for _, line in _lines(location(path), ReadCounts()))


def check_part(path: str | Path, fmt: str, fields: Mapping[str, Any] = WORK_FIELDS) -> ReadCounts:
    """Read one data file through the contract, keeping nothing (the SQL engines' check before they parse it).

    Returns
    -------
    ReadCounts
        What was skipped.

    Raises
    ------
    ScitasteError
        As :func:`read_part`.
    """
    counts = ReadCounts()
    for _ in read_part(path, fmt, fields, counts):
        pass
    return counts


#: Compressed bytes of data files from which :func:`check_parts` checks them in worker processes (below, starting
#: the workers would cost more than they save).
PARALLEL_CHECK_BYTES = 64 * 2**20


def _start_check(path: Path, fmt: str) -> subprocess.Popen:
    # a fresh interpreter: a fork would copy the engine's DuckDB threads mid-flight, and multiprocessing's spawn
    # would import the caller's main module again
    return subprocess.Popen([sys.executable, "-m", __name__, fmt, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def check_parts(paths: list[Path], fmt: str, workers: int) -> Iterator[ReadCounts]:
    """:func:`check_part` of each file, yielded in order as each is done, while up to ``workers`` files after it
    are checked ahead in worker processes (the SQL engines flatten a file as soon as it is accepted). In this
    process when ``workers`` is 1 or the files are small.

    Raises
    ------
    ScitasteError
        As :func:`check_part`, at the first refused file in order.
    """
    if workers <= 1 or len(paths) < 2 or sum(p.stat().st_size for p in paths) < PARALLEL_CHECK_BYTES:
        for path in paths:
            yield check_part(path, fmt)
        return
    running = deque(_start_check(path, fmt) for path in paths[:workers])
    try:
        for k in range(len(paths)):
            out, err = running[0].communicate()
            code = running.popleft().returncode
            if k + workers < len(paths):
                running.append(_start_check(paths[k + workers], fmt))
            if code == 2:
                raise ScitasteError(err.decode("utf-8", "replace").strip())
            if code:  # the worker could not run (no import path to this package, no memory): check it here
                yield check_part(paths[k], fmt)
                continue
            counts = ReadCounts()
            counts.blank_lines = int(out)
            yield counts
    finally:
        for proc in running:
            proc.kill()
            proc.wait()


if __name__ == "__main__":  # a worker of check_parts: FMT PATH -> the blank lines, or the refusal on stderr (exit 2)
    try:
        print(check_part(sys.argv[2], sys.argv[1]).blank_lines)
    except ScitasteError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)
