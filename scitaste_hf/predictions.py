"""Reading a run's predictions file: one JSON object per line, in either of two formats, told apart line by line.

- A predictions line, keyed by ``bibcode``, holds the answer fields (``innovation_score``, ``dimension_scores``,
  ...), or the model's raw reply as ``response`` (read with :func:`reply_answer`), or a recorded failure as
  ``failure`` (a reason of :data:`~scitaste_hf.schema.FAILURE_REASONS`) with an optional ``detail``.
- An lm-eval samples line (``samples_<task>_<time>.jsonl``, as ``lm_eval --log_samples`` and ``scitaste eval
  --log_samples`` write it) is recognised by its ``doc`` and ``filtered_resps`` keys (:data:`SAMPLE_KEYS`): the
  paper is ``doc.bibcode`` and the answer is the logged reply after lm-eval's filters, ``filtered_resps[0]``, read
  exactly as the task's ``process_results`` reads it, so that a score of the file equals lm-eval's own metrics.

An Inspect log (``.eval`` or ``.json``, :func:`is_inspect_log`) is a run too: its samples are read as lm-eval
samples lines by the adapter that knows Inspect (:func:`log_reader`), only when inspect-ai is installed.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.records import jsonl_lines
from scitaste_hf.resources import install_hint
from scitaste_hf.schema import FAILURE_REASONS, Answer, Failure, failure_of
from scitaste_hf.scoring import parse_answer, validate_answer

#: The keys of an lm-eval samples line that no predictions line has: a line with either is read as a sample.
SAMPLE_KEYS = ("doc", "filtered_resps")
#: The keys a predictions line may have; another key is named when a line cannot be read, as a likely misspelling.
PREDICTION_KEYS = ("bibcode", *Answer.model_fields, "response", "error", "failure", "detail")
#: The entry-point group of the readers of other harnesses' logs (``inspect``: Inspect's); the core package reaches
#: an adapter only through it.
LOG_READERS = "scitaste_hf.log_readers"
#: How an Inspect log in JSON begins (its first keys; a predictions or samples file is JSON lines of other keys).
_INSPECT_JSON = re.compile(rb'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def is_samples_log(data: bytes) -> bool:
    """Whether ``data``'s first line is an lm-eval samples line (:data:`SAMPLE_KEYS`), read without decoding the
    rest, or ``data`` is an Inspect log (:func:`is_inspect_log`): a samples log holds every prompt, so a size limit
    meant for predictions lines would refuse it."""
    if is_inspect_log(data):
        return True
    first = data.lstrip()[:4 * 2**20].split(b"\n", 1)[0]
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, too deep: the parser will say what is wrong
        return False
    return isinstance(obj, dict) and any(k in obj for k in SAMPLE_KEYS)


def is_inspect_log(data: bytes) -> bool:
    """Whether ``data`` is an Inspect log: a ``.eval`` archive (a zip file with Inspect's header or journal) or a
    ``.json`` log (an object that opens with ``version`` and ``status``)."""
    if data[:4] == b"PK\x03\x04":
        try:
            names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        except zipfile.BadZipFile:
            return False
        return bool(names & {"header.json", "_journal/start.json"})
    return _INSPECT_JSON.match(data[:256]) is not None


def log_reader(source: str) -> ModuleType:
    """The reader of Inspect logs (``scitaste_hf.adapters.inspect.logs``, found through :data:`LOG_READERS`).

    Raises
    ------
    ScitasteError
        When inspect-ai is not installed (the line says how to install it), or the reader is not registered.
    """
    import importlib.util
    from importlib.metadata import entry_points

    if importlib.util.find_spec("inspect_ai") is None:
        raise ScitasteError(f"{source} is an Inspect log; reading it needs inspect-ai: {install_hint('inspect')}")
    found = list(entry_points(group=LOG_READERS, name="inspect"))
    if not found:
        raise ScitasteError(f"{source} is an Inspect log and this install of scitaste-hf has no reader of them "
                            "(its entry points are missing): reinstall it")
    return found[0].load()


def logged_field(data: bytes, source: str, key: str) -> str | None:
    """A field of the document an lm-eval samples log or an Inspect log records on its first sample
    (``scitaste_mode``, ``withheld``), when it is a string; None for a predictions file, which records none."""
    if not is_samples_log(data):
        return None
    first = run_text(data, source).lstrip().split("\n", 1)[0]
    doc = json.loads(first).get("doc")
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def run_text(data: bytes, source: str) -> str:
    """A run file's text: its JSONL as it is, or an Inspect log's samples as lm-eval samples lines.

    Raises
    ------
    ScitasteError
        For an Inspect log that cannot be read (see :func:`log_reader`).
    UnicodeDecodeError
        For a file that is neither an Inspect log nor UTF-8 text.
    """
    if is_inspect_log(data):
        return log_reader(source).samples_text(data, source)
    return data.decode("utf-8")


def reply_answer(text: object) -> Answer | Failure:
    """A model's reply as the tasks score it: a failure recorded by scitaste's models
    (:func:`~scitaste_hf.schema.failure_of`) keeps its reason, anything else is parsed with
    :func:`~scitaste_hf.scoring.parse_answer`; a reply that is not text is a failure (``other``)."""
    if not isinstance(text, str):  # what a model or an old cache hands back is not ours to trust
        return Failure("other", f"the model returned {type(text).__name__}, not text")
    if reason := failure_of(text):
        return Failure(reason if reason in FAILURE_REASONS else "other", text)
    return parse_answer(text)


def _unknown(obj: dict) -> str:
    """`` (unknown key 'x')`` for the keys of a predictions line that no reader uses, else ``""``."""
    unknown = [k for k in obj if k not in PREDICTION_KEYS]
    if not unknown:
        return ""
    return f" (unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown[:3])}" + (
        f" +{len(unknown) - 3} more)" if len(unknown) > 3 else ")")


def _line_to_answer(obj: dict, strict_fields: bool) -> Answer | Failure:
    if "response" in obj:
        response = obj["response"]
        if response is None:
            return Failure("api_error", str(obj.get("error") or "no response"))
        return reply_answer(response)
    if "failure" in obj:
        reason = obj["failure"] if obj["failure"] in FAILURE_REASONS else "other"
        return Failure(reason, str(obj.get("detail") or obj["failure"]))
    if "innovation_score" in obj or "dimension_scores" in obj:
        answer = validate_answer(obj)
        if isinstance(answer, Failure):
            answer = Failure(answer.reason, answer.detail + _unknown(obj))
            if strict_fields:
                raise InvalidInput(f"invalid answer fields ({answer.reason}): {answer.detail}")
        return answer
    detail = "the line has no answer fields (innovation_score, dimension_scores), response or failure" + _unknown(obj)
    if strict_fields:
        raise InvalidInput(detail)
    return Failure("schema", detail)


def _sample(obj: dict) -> tuple[str | None, Answer | Failure]:
    """The paper and the answer of an lm-eval samples line (see the module's docstring).

    Raises
    ------
    ScitasteError
        When the line also has a top-level ``bibcode`` (it would be both formats), or lacks ``doc`` or
        ``filtered_resps`` in the shapes lm-eval writes.
    """
    if "bibcode" in obj:
        raise InvalidInput("the line has both a predictions line's 'bibcode' and an lm-eval sample's "
                            f"{' and '.join(repr(k) for k in SAMPLE_KEYS if k in obj)}: give one format a line")
    doc, replies = obj.get("doc"), obj.get("filtered_resps")
    if not isinstance(doc, dict):
        raise InvalidInput("an lm-eval sample needs 'doc', the paper's record (with its bibcode)")
    if not isinstance(replies, list):
        raise InvalidInput("an lm-eval sample needs 'filtered_resps', the list of the model's filtered replies")
    # lm-eval hands process_results one filtered reply per request; a generate_until task makes one request a paper
    return doc.get("bibcode"), reply_answer(replies[0] if replies else "")


def parse_predictions(lines: Iterable[str], source: str, *, strict_fields: bool = False
                      ) -> dict[str, Answer | Failure]:
    """Parse predictions JSONL lines into ``{bibcode: Answer or Failure}``.

    Parameters
    ----------
    lines : iterable of str
        The file's lines, split on ``"\\n"`` only (see :func:`~scitaste_hf.records.jsonl_lines`); blank
        lines are skipped.
    source : str
        Name of the input in error messages (``source:line: ...``).
    strict_fields : bool
        When true, answer fields that fail validation (NaN, out of range, a missing dimension) are an error
        for the whole file instead of a counted failure: for submitted files, whose fields the submitter
        wrote, as opposed to raw model replies, which are the model's.

    Raises
    ------
    ScitasteError
        When there are no lines, a line is not a JSON object, lacks a ``bibcode`` (a predictions line) or a
        ``doc.bibcode`` (a samples line), or repeats one.
    """
    out: dict[str, Answer | Failure] = {}
    first_line: dict[str, int] = {}
    modes: dict[str, object] = {}  # a samples line's mode (doc.scitaste_mode), to name two logs run together
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{source}:{number}: not a JSON line ({exc.msg})") from None
        except RecursionError:
            raise InvalidInput(f"{source}:{number}: not a JSON line (nested too deeply)") from None
        except ValueError:  # Python's int-string conversion limit: json refuses an integer of over 4300 digits
            raise InvalidInput(f"{source}:{number}: not a JSON line (a number has too many digits)") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"{source}:{number}: expected a JSON object, got {type(obj).__name__}")
        try:
            if any(k in obj for k in SAMPLE_KEYS):
                bibcode, answer = _sample(obj)
                where = "'doc.bibcode' (the lm-eval sample's paper)"
            else:
                bibcode, answer, where = obj.get("bibcode"), None, "'bibcode'"
            if not isinstance(bibcode, str) or not bibcode:
                raise InvalidInput(f"missing {where}")
            mode = obj["doc"].get("scitaste_mode") if isinstance(obj.get("doc"), dict) else None
            if bibcode in first_line:
                mixed = mode is not None and modes.get(bibcode) not in (None, mode)
                raise InvalidInput(f"duplicate bibcode {bibcode} (first on line {first_line[bibcode]})" + (
                    f": the samples of modes {modes[bibcode]} and {mode}; give one task's samples log" if mixed
                    else ""))
            first_line[bibcode], modes[bibcode] = number, mode
            out[bibcode] = answer if answer is not None else _line_to_answer(obj, strict_fields)
        except ScitasteError as exc:
            raise InvalidInput(f"{source}:{number}: {exc}") from None
    if not out:
        raise InvalidInput(f"{source} is empty")
    return out


def read_predictions(path: str | Path) -> dict[str, Answer | Failure]:
    """Read a predictions JSONL file, an lm-eval samples log or an Inspect log, into ``{bibcode: Answer or
    Failure}`` (see :func:`parse_predictions`).

    Raises
    ------
    ScitasteError
        When the file is missing, unreadable or empty, or a line is malformed.
    """
    path = Path(path)
    try:
        data = path.read_bytes()  # once: a samples log or an Inspect log may be tens of MiB
        if is_inspect_log(data):
            text = log_reader(str(path)).samples_text(data, str(path))
        else:  # with universal newlines, as a predictions file has always been read
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        lines = jsonl_lines(text)
    except FileNotFoundError:
        raise ScitasteError(f"predictions file not found: {path}") from None
    except OSError as exc:  # a folder, no permission, an I/O error
        raise ScitasteError(f"cannot read predictions file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScitasteError(f"cannot read predictions file {path}: {exc}") from None
    return parse_predictions(lines, str(path))


def prediction_lines(predictions: Mapping[str, Answer | Failure]) -> str:
    """``predictions`` as a predictions file's text, one line a paper: the answer fields, or the failure with its
    detail; :func:`parse_predictions` reads it back to the same answers (a samples log, say, made compact)."""
    return "".join(json.dumps({"bibcode": bibcode, **(answer.model_dump(mode="json", exclude_none=True)
                                                      if isinstance(answer, Answer) else
                                                      {"failure": answer.reason, "detail": answer.detail})}) + "\n"
                   for bibcode, answer in predictions.items())
