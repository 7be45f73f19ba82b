"""What the board knows of a run's model beyond its name (issue 29): its size, licence, base model and whether its
weights are open, read from the Hub's model card and repo when a submission or a request names a Hub model id; and
its knowledge cutoff, which only the submitter can state.

Each field is a value read, or None, which the board shows as :data:`UNKNOWN`: nothing is guessed (a model whose card
names no licence has an unknown licence, not an open one). ``checked`` says where the fields came from
(:data:`CHECKS`): read from the Hub, not found there, unverified because the Hub could not be asked (offline or
unreachable: the Hub id and revision are kept as given), or stated only (no Hub id named).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import date
from typing import Any

from scitaste_hf.errors import short_repr
from scitaste_hf.net.guard import SubmissionError

#: Where a run's model metadata came from.
READ, NOT_FOUND, UNVERIFIED, STATED = "read from the Hub", "not on the Hub", "unverified", "as stated"
CHECKS = (READ, NOT_FOUND, UNVERIFIED, STATED)
#: How a field that could not be read is shown.
UNKNOWN = "unknown"
#: The fields the board shows of a run's model, in its columns' order.
FIELDS = ("params", "open_weights", "licence", "base_model", "knowledge_cutoff", "checked")
#: Files whose presence in a model repo means its weights can be downloaded (open weights).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx")
#: Seconds the Hub is given to answer for one model (a submission waits for it).
METADATA_TIMEOUT = 5.0
#: A stated knowledge cutoff: a year, a month or a day.
_CUTOFF = re.compile(r"^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$")


def check_cutoff(value: str | None) -> str:
    """A knowledge cutoff as a submitter states it (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``), stripped; empty when not
    given (:class:`SubmissionError` in one line for anything else)."""
    value = (value or "").strip() if isinstance(value, str) else value
    first = _first_day(value) if isinstance(value, str) and _CUTOFF.match(value) else None
    if not isinstance(value, str) or (value and first is None):
        raise SubmissionError("knowledge cutoff: a year, month or day as YYYY, YYYY-MM or YYYY-MM-DD")
    if first is not None and first > date.today():
        # no model knows what has not happened; the board's cutoff filters would list it under none of their years
        raise SubmissionError(f"knowledge cutoff {value}: after today")
    return value


def _first_day(value: str) -> date | None:
    """The first day of a stated cutoff (a year or a month as its first day), None when the calendar has no such day:
    the pattern lets 2023-02-31 and year 0000 through."""
    try:
        return date.fromisoformat(value + "-01" * (2 - value.count("-")))
    except ValueError:
        return None


def _base_model(card: Any) -> str | None:
    base = card.get("base_model") if card is not None else None
    if isinstance(base, str):
        return base.strip() or None
    if isinstance(base, list) and base and all(isinstance(b, str) for b in base):
        return ", ".join(base)
    return None


def _licence(card: Any) -> str | None:
    licence = card.get("license") if card is not None else None
    if isinstance(licence, str) and licence.strip():
        # "other" means the card names its own licence: its name, where given, says which
        name = card.get("license_name") if licence.strip() == "other" else None
        return name.strip() if isinstance(name, str) and name.strip() else licence.strip()
    return None


def model_metadata(hub_id: str = "", revision: str = "", knowledge_cutoff: str = "") -> dict[str, Any]:
    """The model metadata of a run: for a Hub model id (validated by the caller), what the Hub's model info gives at
    ``revision`` (default branch when empty): ``params`` (the safetensors parameter count), ``licence`` and
    ``base_model`` (the card's metadata), ``open_weights`` (whether the repo holds weights files) and ``revision``
    (the commit); plus the stated ``knowledge_cutoff``. A field not read is None; ``checked`` is one of
    :data:`CHECKS`. Never raises for the Hub: a model that is not there, or a Hub that does not answer in
    :data:`METADATA_TIMEOUT` seconds, leaves the fields None."""
    out: dict[str, Any] = {"hub_id": hub_id or None, "revision": revision or None,
                           "knowledge_cutoff": knowledge_cutoff or None, "params": None, "licence": None,
                           "base_model": None, "open_weights": None, "checked": STATED if not hub_id else UNVERIFIED}
    if not hub_id:
        return out
    from scitaste_hf import constants

    if constants.hf_hub_offline():
        return out
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    from scitaste_hf.net.hub import bound_hub_calls

    bound_hub_calls()
    try:
        info = HfApi(endpoint=constants.hf_endpoint()).model_info(hub_id, revision=revision or None,
                                                                  timeout=METADATA_TIMEOUT)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        return {**out, "checked": NOT_FOUND}
    except Exception:  # unreachable, refused, malformed: the Hub's and the HTTP library's errors differ by version
        return out
    total = getattr(info.safetensors, "total", None) if info.safetensors is not None else None
    files = [s.rfilename for s in info.siblings] if info.siblings is not None else None
    return {**out, "revision": info.sha or out["revision"], "checked": READ,
            "params": total if isinstance(total, int) and total > 0 else None,
            "licence": _licence(info.card_data), "base_model": _base_model(info.card_data),
            "open_weights": None if files is None else any(f.lower().endswith(WEIGHT_SUFFIXES) for f in files)}


def shown(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The board's value of each of :data:`FIELDS` for ``metadata`` (None: a run stored before the board kept any):
    ``params`` in billions (a number, to sort by; None when not read), the others as text, :data:`UNKNOWN` when not
    read, open weights as yes or no."""
    m = metadata or {}
    weights = m.get("open_weights")
    return {"params": m["params"] / 1e9 if m.get("params") else None,
            "open_weights": UNKNOWN if weights is None else "yes" if weights else "no",
            **{field: m.get(field) or UNKNOWN for field in ("licence", "base_model", "knowledge_cutoff", "checked")}}


# -- the board's filters on a run's model ---------------------------------------------------------------------------
#: The first year the knowledge-cutoff filter offers ("cutoff before YYYY"); the last is next year.
FIRST_CUTOFF_YEAR = 2020
#: The parameter-count filter's bands: name -> [low, high) in billions of parameters.
PARAM_BANDS = {"under 3B": (0.0, 3.0), "3B to 15B": (3.0, 15.0), "15B to 80B": (15.0, 80.0),
               "80B and over": (80.0, math.inf)}
#: The model filters' kinds, each a field of :func:`model_metadata`, in the order their choices are listed.
FILTER_KINDS = {"cutoff": "knowledge_cutoff", "params": "params"}
#: How the model filters combine and treat a field that is unknown (the Space's filter says it).
FILTER_RULE = ("choices of one kind add up (cutoff before 2023 or 2024), kinds narrow (and under 3B); a run whose "
               f"cutoff or size is unknown is kept only by 'cutoff {UNKNOWN}' or 'params {UNKNOWN}'")


def _before(year: int):
    # a cutoff stated as a year, month or day (YYYY[-MM[-DD]]) sorts as the dates do: all of it before 1 January
    return lambda cutoff: cutoff is not None and cutoff < str(year)


def _band(low: float, high: float):
    return lambda params: params is not None and low <= params / 1e9 < high


def model_filters() -> dict[str, tuple[str, Any]]:
    """The model filters' choices, the one definition of each: choice -> (its kind of :data:`FILTER_KINDS`, whether
    a value of that field passes it). ``cutoff before YYYY`` from :data:`FIRST_CUTOFF_YEAR` to next year, the bands
    of :data:`PARAM_BANDS`, and for each kind the choice ``KIND unknown``, which keeps the runs whose field is
    unknown (None: not read, not stated) and which no other choice keeps."""
    out: dict[str, tuple[str, Any]] = {}
    for year in range(FIRST_CUTOFF_YEAR, date.today().year + 2):
        out[f"cutoff before {year}"] = ("cutoff", _before(year))
    out[f"cutoff {UNKNOWN}"] = ("cutoff", lambda cutoff: cutoff is None)
    for name, (low, high) in PARAM_BANDS.items():
        out[f"params {name}"] = ("params", _band(low, high))
    out[f"params {UNKNOWN}"] = ("params", lambda params: params is None)
    return out


def check_filters(chosen: Any) -> tuple[str, ...]:
    """Model-filter choices (:func:`model_filters`) as a view keys them: each once, in the filters' order; None or
    empty for none. :class:`SubmissionError` in one line for a choice that is not one."""
    filters = model_filters()
    chosen = [] if chosen is None or chosen == "" else [chosen] if isinstance(chosen, str) else chosen
    # a raw call may send any JSON: a number or a list of lists would otherwise fail as a TypeError
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(c, str) for c in chosen):
        raise SubmissionError(f"model filter: a list of choices, each one of {', '.join(filters)}")
    wrong = [c for c in chosen if c not in filters]
    if wrong:
        raise SubmissionError(f"model filter {short_repr(wrong[0])}: one of {', '.join(filters)}")
    return tuple(c for c in filters if c in chosen)


def model_filter(*, open_weights: bool = False, chosen: tuple[str, ...] = ()) -> Callable[[dict | None], bool]:
    """Whether a run passes the board's model filters, as a test of its model metadata (None: a run stored before the
    board kept any), built once for a view: ``open_weights`` keeps the models the Hub shows with weights files (an
    unknown one is left out); ``chosen``, choices of :func:`model_filters`, keeps a run when, for each kind chosen,
    one of its choices holds for the run's field (:data:`FILTER_RULE`)."""
    filters = model_filters()
    kinds = [(field, [holds for name, (k, holds) in filters.items() if k == kind and name in chosen])
             for kind, field in FILTER_KINDS.items()]
    kinds = [(field, tests) for field, tests in kinds if tests]

    def keeps(metadata: dict | None) -> bool:
        m = metadata or {}
        if open_weights and m.get("open_weights") is not True:
            return False
        return all(any(holds(m.get(field) or None) for holds in tests) for field, tests in kinds)

    return keeps
