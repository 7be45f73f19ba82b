"""Where each service answers: its live API root, and its place on the offline mirror.

The mirror serves each service under a prefix of its own, below which the paths are the live service's
(``/openalex/works``, ``/ads/v1/search/query``, ``/arxiv/api/query``). This module is the one place that says so,
for the clients, the builder, ``scitaste evidence freeze``, the mirror and the replay server alike.
"""

from __future__ import annotations

from urllib.parse import urlsplit

#: Each service's live API root: its client's default ``base_url``.
LIVE = {
    "openalex": "https://api.openalex.org",
    "ads": "https://api.adsabs.harvard.edu/v1",
    "arxiv": "https://export.arxiv.org/api",
}
#: The path prefix each service is served under on the mirror.
MIRROR_PREFIXES = {"openalex": "/openalex", "ads": "/ads", "arxiv": "/arxiv"}
#: Where a simulated world's mirror serves its journal table (outside every service's prefix: the services
#: themselves have no JCR quartiles or CAS zones).
JOURNAL_TABLE_PATH = "/simworld/journal-table.csv"


def mirror_clients(mirror_url: str) -> dict[str, dict[str, object]]:
    """The keyword arguments that point each client at a mirror: its base URL there, no rate limit (the mirror is
    local, and the live services' politeness limits would only slow it down) and, for ADS, a placeholder token
    (the mirror asks for none).

    :param mirror_url: the URL ``scitaste mirror serve`` prints.
    :returns: ``openalex``, ``ads`` and ``arxiv`` -> keyword arguments of their clients.
    """
    base = mirror_url.rstrip("/")
    root = {service: base + MIRROR_PREFIXES[service] + urlsplit(url).path for service, url in LIVE.items()}
    return {"openalex": {"base_url": root["openalex"], "rate_limit": None},
            "ads": {"base_url": root["ads"], "rate_limit": None, "token": "mirror"},
            "arxiv": {"base_url": root["arxiv"], "min_interval": 0}}


def mirror_route(path: str) -> tuple[str, str] | None:
    """The service a request path on the mirror is for, and the path below its prefix
    (``/ads/v1/search/query`` -> ``("ads", "/v1/search/query")``); None for a path of no service.

    :param path: the request path.
    """
    for service, prefix in MIRROR_PREFIXES.items():
        if path.startswith(prefix + "/"):
            return service, path[len(prefix):]
    return None


def mirror_path(url: str) -> str:
    """The path on the mirror of a live service's URL (``https://api.openalex.org/works`` -> ``/openalex/works``);
    the URL's own path when its host is none of the services'.

    :param url: an absolute URL.
    """
    parts = urlsplit(url)
    for service, live in LIVE.items():
        if urlsplit(live).netloc == parts.netloc:
            return MIRROR_PREFIXES[service] + parts.path
    return parts.path
