"""Errors a user can cause. The CLI prints them as one line (``scitaste: error: ...``) instead of a traceback."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type's name when the message is empty: what a one-line
    error quotes of a library's multi-line one."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class ScitasteError(ValueError):
    """Bad input, bad configuration or a missing resource; the message says what to do."""


class TaskUnavailable(SystemExit):
    """A benchmark task that cannot run as asked (a model that lacks what the mode needs, or no frozen evidence).

    A ``SystemExit`` on purpose: raised while lm-eval loads the tasks, it ends even stock ``lm_eval`` with this one
    line instead of a traceback, before any paper is sent; :meth:`__str__` is the line.
    """
