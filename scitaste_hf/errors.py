"""Errors a user can cause. The CLI prints them as one line (``scitaste: error: ...``) instead of a traceback."""


class ScitasteError(ValueError):
    """Bad input, bad configuration or a missing resource; the message says what to do."""
