"""The TLS context every HTTP client of the package is made with, one per process.

httpx builds a new :class:`ssl.SSLContext` for each client, and loading the certificate bundle into it costs about
25 ms of CPU: more than a whole exchange with a local server. The package makes a client per chat request
(:mod:`.bounded`) and per source listing, so the context is made once and shared (an ``SSLContext`` may serve any
number of connections and threads), as httpx's documentation suggests for programs that make many clients.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """httpx's default context (certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` where set), made at the
    first call of the process; pass it as ``verify=`` to an httpx client. The variables are read at that first
    call only."""
    import httpx

    return httpx.create_ssl_context()
