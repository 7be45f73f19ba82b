"""Reading an rTaste release: a dataset folder in the Hub layout (config ``rtaste``), or one JSONL or Parquet
file of rows, validated row by row and condition by condition."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.rtaste.schema import N_MVES, Condition, MVERecord, condition_of, rtaste_features

#: The config name of the release on the Hub.
CONFIG = "rtaste"
#: Its only split: the study has no train/test distinction, every MVE is one evaluation item.
SPLIT = "train"


def example_release_dir() -> Path:
    """The bundled synthetic release (simulated data in the release schema, not study data)."""
    return Path(str(resources.files("scitaste_hf").joinpath("data/rtaste_example")))


@dataclass(frozen=True)
class Release:
    """A validated release: its rows, and the condition each group of five rows forms."""

    records: tuple[MVERecord, ...]
    conditions: dict[str, Condition]

    def by_condition(self) -> dict[str, list[MVERecord]]:
        """The rows of each condition, in written order (position 1-5)."""
        return _group(self.records)


def _group(records: tuple[MVERecord, ...] | list[MVERecord]) -> dict[str, list[MVERecord]]:
    out: dict[str, list[MVERecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.condition_id, r.position)):
        out[record.condition_id].append(record)
    return dict(out)


def _first_line(exc: BaseException) -> str:
    # datasets wraps the parser's error ("... in row 3") in a generic one ("An error occurred while generating
    # the dataset"): the first cause that says more is what the user needs.
    text, cause = first_line(exc), exc.__cause__ or exc.__context__
    if cause is not None and "An error occurred while generating" in text:
        return f"{text}: {first_line(cause)}"
    return text


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """``datasets`` without progress bars or log lines for the block, and as it was after: on a file it cannot
    read, it draws a bar and logs the schema it expected, all ahead of the one-line error."""
    import datasets

    bars, level = datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(level)
        if bars:
            datasets.enable_progress_bars()


def _read_rows(source: Path, split: str) -> list[dict[str, Any]]:
    import datasets

    try:
        with _quiet_datasets():
            if source.is_dir():
                ds = datasets.load_dataset(str(source), CONFIG, split=split)
            elif source.suffix.lower() in (".jsonl", ".json", ".parquet"):
                builder = "parquet" if source.suffix.lower() == ".parquet" else "json"
                ds = datasets.load_dataset(builder, data_files=str(source), split="train",
                                           features=rtaste_features())
            else:
                raise ScitasteError(f"unsupported release file {source.name}: use .jsonl, .json, .parquet or a "
                                    "folder")
    except ScitasteError:
        raise
    except Exception as exc:  # datasets raises many types for a bad file or config; the message says which
        raise ScitasteError(f"cannot read the rTaste release {source}: {_first_line(exc)}") from None
    return ds.to_list()


def validation_message(exc: ValidationError) -> str:
    """A schema error in one line: where its first error is (``field.sub``) and what it says."""
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def validate_rows(rows: list[dict[str, Any]], source: str = "release") -> Release:
    """Validate release rows into a :class:`Release`.

    Parameters
    ----------
    rows : list of dict
        Rows in the release schema (:class:`~scitaste_hf.rtaste.schema.MVERecord`).
    source : str
        Where the rows came from, for error messages.

    Raises
    ------
    ScitasteError
        On the first bad row (with its MVE id and field), a repeated MVE id, or a condition that does not
        have exactly five rows forming a valid :class:`~scitaste_hf.rtaste.schema.Condition`.
    """
    if not rows:
        raise ScitasteError(f"{source}: the release has no rows")
    records, seen = [], set()
    for number, row in enumerate(rows, start=1):
        label = f"row {number}" + (f" (mve {row['mve_id']})" if isinstance(row, dict) and row.get("mve_id") else "")
        try:
            record = MVERecord.model_validate(row)
        except ValidationError as exc:
            raise ScitasteError(f"{source}: {label}: {validation_message(exc)}") from None
        if record.mve_id in seen:
            raise ScitasteError(f"{source}: {label}: mve_id {record.mve_id!r} appears twice")
        seen.add(record.mve_id)
        records.append(record)
    conditions = {}
    for condition_id, group in _group(records).items():
        if len(group) != N_MVES:
            raise ScitasteError(f"{source}: condition {condition_id!r} has {len(group)} registrations; "
                                f"a condition needs exactly {N_MVES}")
        try:
            conditions[condition_id] = condition_of(group)
        except ValidationError as exc:
            raise ScitasteError(f"{source}: condition {condition_id!r}: {validation_message(exc)}") from None
        except ValueError as exc:
            raise ScitasteError(f"{source}: condition {condition_id!r}: {exc}") from None
    return Release(tuple(records), conditions)


def load_release(source: str | Path | None = None, split: str = SPLIT) -> Release:
    """Load and validate an rTaste release.

    Parameters
    ----------
    source : path, optional
        A dataset folder in the Hub layout (read with ``datasets.load_dataset(source, "rtaste")``), or a
        ``.jsonl``/``.json``/``.parquet`` file of rows; default the bundled synthetic release.
    split : str
        The split of a dataset folder (default ``train``, the release's only split).
    """
    path = example_release_dir() if source is None else Path(source)
    if not path.exists():
        raise ScitasteError(f"rTaste release not found: {path}")
    return validate_rows(_read_rows(path, split), str(path))
