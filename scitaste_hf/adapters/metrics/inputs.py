"""Inputs of the ``evaluate`` metric modules, kept exactly as the user gave them.

``evaluate`` casts a module's inputs to its ``datasets`` features before ``_compute`` sees them: a float feature
turns ``True`` into 1.0 and ``"50"`` into 50.0, and a struct feature raises on an extra key such as the reply's
``reasoning``. The modules therefore declare every input as JSON text (:data:`FEATURES`), store each item with
:func:`encode` (through :class:`KeepInputs`) and read it back with :func:`decode`, so that the validation of
:mod:`scitaste_hf.scoring` and :mod:`scitaste_hf.rtaste` sees what was passed, ``NaN`` and ``None`` included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import datasets

from scitaste_hf.errors import ScitasteError

#: The features of every metric module: one JSON text per prediction and per reference.
FEATURES = datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")})


def _plain(obj: Any) -> Any:
    """What ``json`` cannot write itself: a pydantic answer, a numpy or torch number or array."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"a {type(obj).__name__} is not a JSON value")


def encode(column: Iterable[Any] | None, name: str) -> list[str] | None:
    """Each item of an input column as JSON text.

    :param column: the items as the user passed them (None: the column was not given).
    :param name: the argument's name, for messages.
    :raises ScitasteError: when ``column`` is not a list of items or an item has no JSON form.
    """
    if column is None:
        return None
    if isinstance(column, str | bytes | Mapping):
        raise ScitasteError(f"{name} must be a list, got {type(column).__name__}")
    encoded = []
    for i, item in enumerate(column):
        try:
            encoded.append(json.dumps(item, default=_plain))
        except (TypeError, ValueError) as exc:
            raise ScitasteError(f"{name}[{i}] cannot be read: {exc}") from None
    return encoded


def decode(column: Iterable[str]) -> list[Any]:
    """The items of a column stored by :func:`encode`, as they were given.

    :param column: the JSON texts.
    """
    return [json.loads(item) for item in column]


class KeepInputs:
    """Mixin for an ``evaluate.Metric`` (listed before it) whose features are :data:`FEATURES`: ``add`` and
    ``add_batch`` (which ``compute`` goes through) store every item as JSON text."""

    def add_batch(self, *, predictions=None, references=None, **kwargs) -> None:
        """Add a batch of predictions and references, kept exactly as given."""
        super().add_batch(predictions=encode(predictions, "predictions"),
                          references=encode(references, "references"), **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs) -> None:
        """Add one prediction and reference, kept exactly as given."""
        super().add(prediction=encode([prediction], "prediction")[0],
                    reference=encode([reference], "reference")[0], **kwargs)
