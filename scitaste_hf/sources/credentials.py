"""Credentials: a keyword argument, else the environment, else the credentials file; and the one-line error when a
needed one is missing. Every caller that needs a secret asks here (the clients, the builder), so that each accepts
the same places and says the same thing when none holds it. Secrets never appear in a message.
"""

from __future__ import annotations

import os

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError
from scitaste_hf.sources.errors import AuthError


def _credentials_file() -> dict[str, str]:
    """The entries of the credentials file; none without the file. A path that holds something else (a folder, a
    FIFO, an unreadable or non-UTF-8 file) is an error rather than no file: the user put the secret there."""
    import tomllib

    from scitaste_hf.bounded_load import read_text

    path = constants.credentials_file()
    if not os.path.lexists(path):
        return {}
    text = read_text(path, "credentials file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column, never the value
        raise ScitasteError(f"credentials file {path} is not valid TOML: {exc}") from None
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, str | int):  # true would be the token "True"
            raise ScitasteError(f'credentials file {path}: {key} must be a string: {key} = "..."')
    return {k: str(v) for k, v in data.items()}


def resolve_secret(value: str | None, env_var: str) -> str | None:
    """A credential from a keyword argument, else from the environment, else from the credentials file
    (:func:`scitaste_hf.constants.credentials_file`: TOML with the variables' names as keys,
    ``ADS_API_TOKEN = "..."``), else None.

    :param value: the value passed by the caller, if any.
    :param env_var: environment variable (and key of the credentials file) to fall back on, one of
        :data:`scitaste_hf.constants.CREDENTIAL_VARIABLES`.
    """
    return value or constants.read(env_var) or _credentials_file().get(env_var) or None


def missing_secret(env_var: str, needed: str) -> str:
    """The one line that says a credential is missing and where it may be put.

    :param env_var: the environment variable (and key of the credentials file).
    :param needed: who needs it, as the message begins (``"--source live needs a NASA ADS API token"``).
    """
    return f"{needed}: set {env_var} in the environment or in the credentials file {constants.credentials_file()}"


def require_secret(value: str | None, env_var: str, needed: str) -> str:
    """:func:`resolve_secret`, or an :class:`~scitaste_hf.sources.errors.AuthError` of :func:`missing_secret` when
    no place holds the credential.

    :param value: the value passed by the caller, if any.
    :param env_var: environment variable (and key of the credentials file) to fall back on.
    :param needed: who needs it, as the message begins.
    """
    if secret := resolve_secret(value, env_var):
        return secret
    raise AuthError(missing_secret(env_var, needed))
