"""Loading benchmark records (the gold labels) from a file, a dataset folder in the Hub layout, or the Hub."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


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
    if not path.exists() and not _HUB_ID.match(str(source)):
        raise ScitasteError(f"gold file or dataset folder not found: {source}")
    import datasets
    from huggingface_hub.errors import HfHubHTTPError

    on_hub = not path.exists()
    instead = "give a local dataset folder or a .jsonl/.parquet file instead"
    if on_hub and not _cached(str(source)):
        from scitaste_hf.net.hub import require_hub

        require_hub(f"dataset {source}", instead)
    try:
        ds = datasets.load_dataset(str(source), split=split)
    except ValueError as exc:
        raise ScitasteError(f"cannot load split {split!r} of {source}: {str(exc).splitlines()[0]}") from None
    except (FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as exc:
        raise ScitasteError(f"no dataset at {source}: {str(exc).splitlines()[0]}") from None
    except ConnectionError as exc:  # offline, and no cached copy
        raise ScitasteError(f"{str(exc).splitlines()[0]}; {instead}") from None
    except HfHubHTTPError as exc:  # the Hub answered, and refused (a private or gated dataset, a bad token)
        raise ScitasteError(f"the Hub refused dataset {source}: {str(exc).splitlines()[0]}; {instead}") from None
    return ds.to_list()


def _cached(repo_id: str) -> bool:
    """Whether the Hub dataset ``repo_id`` has a copy in the local Hugging Face cache (loadable offline)."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        return any(r.repo_id == repo_id and r.repo_type == "dataset" for r in scan_cache_dir().repos)
    except CacheNotFound:
        return False


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
        raise ScitasteError(f"{where}: expected a JSON object, got {type(value).__name__}")
    if not isinstance(value.get("bibcode"), str) or not value["bibcode"]:
        raise ScitasteError(f"{where}: missing 'bibcode'")
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
                raise ScitasteError(f"{path}: expected a JSON array of records")
            return [_record(r, f"{path}: record {i}") for i, r in enumerate(data, start=1)]
        if suffix == ".jsonl":
            records = []
            for number, line in enumerate(jsonl_lines(text), start=1):
                if line.strip():
                    try:
                        value = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ScitasteError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
                    except RecursionError:
                        raise ScitasteError(f"{path}:{number}: not a JSON line (nested too deeply)") from None
                    records.append(_record(value, f"{path}:{number}"))
            return records
    except ScitasteError:
        raise
    except Exception as exc:  # a corrupt Parquet or undecodable file: say which file, not where it broke
        raise ScitasteError(f"cannot read {path}: {exc}") from None
    raise ScitasteError(f"unsupported gold file type {suffix!r}: use .jsonl, .json or .parquet, or a dataset folder")


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
        raise ScitasteError(f"{path} is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ScitasteError(f"{path} must hold a JSON object of bibcode -> OpenAlex work id")
    return {str(k): str(v) for k, v in data.items()}
