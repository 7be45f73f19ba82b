"""Clients of the bibliographic services: OpenAlex, NASA ADS and arXiv.

``from scitaste_hf.sources import OpenAlexClient, ADSClient, ArxivClient``. Every client takes ``base_url=``
(the service, the offline mirror or a test server), ``cache_dir=`` (None disables the cache) and ``offline=``,
which it gathers in one :class:`~.options.ClientOptions` for its transport;
credentials come from keyword arguments, the environment (``OPENALEX_API_KEY``, ``ADS_API_TOKEN``) or the
credentials file ``~/.config/scitaste/credentials.toml`` (``$SCITASTE_CREDENTIALS``), as :mod:`.credentials`
resolves them for every caller. They share
one transport (:mod:`.transport`): per-host rate limits, the ``X-RateLimit`` budget, bounded concurrency, retries
with backoff, and a plain-file response cache (:mod:`.cache`). The methods are synchronous, except
``OpenAlexClient.afetch_plan``, which runs the listings of a snowball plan concurrently (the builder's snowball) with
the requests ``fetch_plan`` sends. :mod:`.paging` decides when a listing ends (and when it ended short of what the
service announced); :mod:`.snowball` plans the listings of the builder's snowball; :mod:`.endpoints` says where
each service answers, live and on the offline mirror (which :mod:`scitaste_hf.mirror` serves).

Names are resolved on first use, so importing an error class does not import httpx.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "OpenAlexClient": "scitaste_hf.sources.openalex",
    "ADSClient": "scitaste_hf.sources.ads",
    "ArxivClient": "scitaste_hf.sources.arxiv",
    "ClientOptions": "scitaste_hf.sources.options",
    "Work": "scitaste_hf.sources.entities",
    "Source": "scitaste_hf.sources.entities",
    "Snowball": "scitaste_hf.sources.entities",
    "SnowballPlan": "scitaste_hf.sources.snowball",
    "plan_snowball": "scitaste_hf.sources.snowball",
    "Topic": "scitaste_hf.sources.entities",
    "Concept": "scitaste_hf.sources.entities",
    "Authorship": "scitaste_hf.sources.entities",
    "Institution": "scitaste_hf.sources.entities",
    "ADSRecord": "scitaste_hf.sources.entities",
    "ArxivEntry": "scitaste_hf.sources.entities",
    "SourceError": "scitaste_hf.sources.errors",
    "BadRequestError": "scitaste_hf.sources.errors",
    "AuthError": "scitaste_hf.sources.errors",
    "NotFoundError": "scitaste_hf.sources.errors",
    "InvalidIdentifierError": "scitaste_hf.sources.errors",
    "OfflineCacheMiss": "scitaste_hf.sources.errors",
    "BudgetExhausted": "scitaste_hf.sources.errors",
    "ServiceUnavailable": "scitaste_hf.sources.errors",
}

__all__ = [
    "ADSClient",
    "ADSRecord",
    "ArxivClient",
    "ArxivEntry",
    "AuthError",
    "Authorship",
    "BadRequestError",
    "BudgetExhausted",
    "ClientOptions",
    "Concept",
    "Institution",
    "InvalidIdentifierError",
    "NotFoundError",
    "OfflineCacheMiss",
    "OpenAlexClient",
    "ServiceUnavailable",
    "Snowball",
    "SnowballPlan",
    "Source",
    "SourceError",
    "Topic",
    "Work",
    "plan_snowball",
]


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return __all__
