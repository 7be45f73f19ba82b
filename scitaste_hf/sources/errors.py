"""Errors of the bibliographic clients.

All of them are :class:`~scitaste_hf.errors.ScitasteError`, so the CLI prints them as one line; their messages
never contain credentials (the transport redacts every message it builds).
"""

from __future__ import annotations

from scitaste_hf.errors import ScitasteError


class SourceError(ScitasteError):
    """A bibliographic service could not give the answer asked for."""


class BadRequestError(SourceError):
    """The service rejected the request (HTTP 400): a bad filter, field or identifier."""


class AuthError(SourceError):
    """The service refused the credentials (HTTP 401/403), or a needed credential is missing."""


class NotFoundError(SourceError):
    """The service has no record with the requested identifier (HTTP 404)."""


class OfflineCacheMiss(SourceError):
    """Offline mode was asked for and the response is not in the cache."""


class BudgetExhausted(SourceError):
    """The service's request budget (``X-RateLimit-Remaining``) is spent until its reset time."""


class ServiceUnavailable(SourceError):
    """The service kept failing (connection errors, timeouts, 429, 5xx, bad bodies) after every retry."""


class InvalidIdentifierError(SourceError):
    """An identifier is malformed for the service it is meant for; caught before any request is sent."""
