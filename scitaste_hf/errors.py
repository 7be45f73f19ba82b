"""Errors a user can cause. The CLI prints them as one line (``scitaste: error: ...``) instead of a traceback.

:class:`ScitasteError` is not a :class:`ValueError`: a bare ``except ValueError`` around a library's parsing must
not swallow a service that is down (:class:`~scitaste_hf.sources.errors.ServiceUnavailable`) or a missing token
(:class:`~scitaste_hf.sources.errors.AuthError`). Code that means to catch the package's errors names them.
"""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type's name when the message is empty: what a one-line
    error quotes of a library's multi-line one."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def short_repr(value: object, limit: int = 60) -> str:
    """A value as a one-line error quotes it: its repr, cut to ``limit`` characters (a hostile file's value may be
    a 5,000-digit number or a whole mapping)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


class ScitasteError(Exception):
    """Bad input, bad configuration, a missing resource or a service that failed; the message says what to do."""


class InvalidInput(ScitasteError):
    """Input that the package refuses: a record, predictions, weights or configuration file that does not parse or
    does not hold what it must, a command-line argument out of range, scores of the wrong shape."""


class TaskUnavailable(SystemExit):
    """A benchmark task that cannot run as asked (a model that lacks what the mode needs, or no frozen evidence).

    A ``SystemExit`` on purpose: raised while lm-eval loads the tasks, it ends even stock ``lm_eval`` with this one
    line instead of a traceback, before any paper is sent; :meth:`__str__` is the line.
    """
