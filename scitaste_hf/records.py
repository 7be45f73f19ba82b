"""Loading benchmark records (the gold labels) from a file, a dataset folder in the Hub layout, or the Hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scitaste_hf.errors import InvalidInput, ScitasteError, first_line


def load_records(source: str | Path, split: str = "selected") -> list[dict[str, Any]]:
    """Records of one split as a list of dicts.

    Parameters
    ----------
    source : path or Hub id
        A ``.jsonl``/``.json``/``.parquet`` file of records (``split`` is ignored), a dataset folder in the
        Hub layout (read with :func:`datasets.load_dataset`), or a Hub dataset id such as
        ``skylenage/SciTaste-benchmark`` (network needed).
    split : str
        The split of a dataset folder or Hub id, ``selected`` or ``backup``.
    """
    path = Path(source)
    if path.is_file():
        return _read_file(path)
    from scitaste_hf.net.hub import is_hub_id, load_dataset

    if not path.exists() and not is_hub_id(source):
        raise ScitasteError(f"gold file or dataset folder not found: {source}")
    try:
        ds = load_dataset(source, split=split, what=f"dataset {source}",
                          instead="give a local dataset folder or a .jsonl/.parquet file instead")
    except ValueError as exc:  # a split the dataset does not have
        raise ScitasteError(f"cannot load split {split!r} of {source}: {first_line(exc)}") from None
    return ds.to_list()


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text: split on ``"\\n"`` only, a trailing ``"\\r"`` dropped.

    Not :meth:`str.splitlines`, which also splits on U+2028, U+2029, U+0085, ``\\x0b``, ``\\x0c`` and
    ``\\x1c``-``\\x1e``: JSON allows the first three raw inside strings, so it would cut a valid line in two,
    and any of them would shift the line number of every error after it.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _record(value: Any, where: str) -> dict[str, Any]:
    """A gold record as read from a file, checked for what scoring looks it up by."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: expected a JSON object, got {type(value).__name__}")
    if not isinstance(value.get("bibcode"), str) or not value["bibcode"]:
        raise InvalidInput(f"{where}: missing 'bibcode'")
    return value


def _read_file(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            rows = pq.read_table(path).to_pylist()
            return [_record(r, f"{path}: record {i}") for i, r in enumerate(rows, start=1)]
        text = path.read_text(encoding="utf-8")
        if suffix == ".json":
            data = json.loads(text)
            if not isinstance(data, list):
                raise InvalidInput(f"{path}: expected a JSON array of records")
            return [_record(r, f"{path}: record {i}") for i, r in enumerate(data, start=1)]
        if suffix == ".jsonl":
            records = []
            for number, line in enumerate(jsonl_lines(text), start=1):
                if line.strip():
                    try:
                        value = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise InvalidInput(f"{path}:{number}: not a JSON line ({exc.msg})") from None
                    except RecursionError:
                        raise InvalidInput(f"{path}:{number}: not a JSON line (nested too deeply)") from None
                    records.append(_record(value, f"{path}:{number}"))
            return records
    except ScitasteError:
        raise
    except Exception as exc:  # a corrupt Parquet or undecodable file: say which file, not where it broke
        raise ScitasteError(f"cannot read {path}: {exc}") from None
    raise InvalidInput(f"unsupported gold file type {suffix!r}: use .jsonl, .json or .parquet, or a dataset folder")


def load_bibcode_map(dataset_dir: str | Path) -> dict[str, str]:
    """The dataset's ``openalex_bibcode_map`` (bibcode -> OpenAlex work id): the JSON object in
    :data:`~scitaste_hf.schema.BIBCODE_MAP_FILE` beside the splits; an empty dict when the dataset has none."""
    from scitaste_hf.schema import BIBCODE_MAP_FILE

    path = Path(dataset_dir) / BIBCODE_MAP_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object of bibcode -> OpenAlex work id")
    return {str(k): str(v) for k, v in data.items()}
