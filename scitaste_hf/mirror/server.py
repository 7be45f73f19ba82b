"""Serving the mirror: the simulated world (or the recorded real responses) behind the services' own paths, on
the replay/limits/faults application of :mod:`scitaste_hf.mirror.app`.

Each service is under its prefix, which :mod:`scitaste_hf.sources.endpoints` owns; ``GET /health`` answers 200 once
the world is built and the socket listens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path

from scitaste_hf.simworld.latent import FieldWeights
from scitaste_hf.simworld.world import World
from scitaste_hf.sources.endpoints import JOURNAL_TABLE_PATH, mirror_route
from scitaste_hf.taxonomy import Taxonomy

#: Requests the mirror allows before its X-RateLimit budget runs out, unless told otherwise.
DEFAULT_DAILY_LIMIT = 10_000_000


def recorded_dir() -> Path:
    """The packaged recorded real responses (``scitaste_hf/data/recorded``)."""
    return Path(str(resources.files("scitaste_hf").joinpath("data/recorded")))


def world_backend(world: World) -> Callable[[str, str, dict[str, str], bytes], tuple | None]:
    """The backend of :func:`scitaste_hf.mirror.app.build_app` that answers from ``world``."""
    import orjson

    from scitaste_hf.mirror.ads import AdsApi
    from scitaste_hf.mirror.arxiv import ArxivApi
    from scitaste_hf.mirror.openalex import OpenAlexApi
    from scitaste_hf.simworld.render import journal_table_csv

    openalex, ads, arxiv = OpenAlexApi(world), AdsApi(world), ArxivApi(world)
    journal_table = journal_table_csv(world).encode()

    @lru_cache(maxsize=20_000)
    def openalex_get(path: str, query: tuple[tuple[str, str], ...]) -> tuple[int, bytes]:
        # The world never changes, so an answer can be kept as the bytes sent (orjson: serialising is most of
        # a lookup's cost).
        status, content = openalex.answer(path, dict(query))
        return status, orjson.dumps(content)

    @lru_cache(maxsize=2_000)
    def ads_post_or_get(path: str, query: tuple[tuple[str, str], ...], body: bytes) -> tuple[int, bytes]:
        # As for OpenAlex: builds against one mirror repeat their searches (a warm re-run, an --as-of release).
        status, content = ads.answer(path, dict(query), body)
        return status, orjson.dumps(content)

    def backend(method: str, path: str, query: dict[str, str], body: bytes) -> tuple | None:
        if path == JOURNAL_TABLE_PATH and method == "GET":
            return 200, journal_table, "text/csv; charset=utf-8"
        service, below = mirror_route(path) or ("", "")
        if service == "openalex" and method == "GET":
            status, content = openalex_get(below, tuple(sorted(query.items())))
            return status, content, "application/json"
        if service == "ads":
            status, content = ads_post_or_get(below, tuple(query.items()), body)  # in order: ADS echoes it
            return status, content, "application/json"
        if service == "arxiv" and method == "GET":
            status, text = arxiv.answer(below, query)
            return status, text, "application/atom+xml; charset=utf-8"
        return None

    return backend


def build_mirror(world: str = "sim", *, seed: int = 0, papers: int = 6000, rate_limit: int | None = None,
                 daily_limit: int | None = DEFAULT_DAILY_LIMIT, latency: float = 0.0, max_page: int | None = None,
                 fault_rates: dict[str, float] | None = None, progress: Callable[[str], None] | None = None,
                 taxonomy: Taxonomy | None = None, field_weights: FieldWeights | None = None):
    """The mirror's ASGI application.

    Parameters
    ----------
    world : {"sim", "recorded"}
        ``sim``: the simulated world of ``papers`` candidates from ``seed``; ``recorded``: replay the real
        recorded responses shipped with the package.
    seed, papers : int
        Of the simulated world.
    rate_limit : int, optional
        Requests per second beyond which the mirror answers 429 with ``Retry-After``.
    daily_limit : int, optional
        Budget reported in ``X-RateLimit-*`` headers; 429 when spent.
    latency : float
        Seconds added to every answer.
    max_page : int, optional
        Most records a page of the simulated world holds, whatever ``per-page``/``rows``/``max_results`` asked.
    fault_rates : mapping, optional
        Share of random faults per kind (``429``, ``500``, ``empty``, ``truncated``, ``slow``), seeded with ``seed``.
    progress : callable, optional
        Told each step of building a simulated world as it starts, with the time the last one took.
    taxonomy : Taxonomy, optional
        The disciplines and cells the simulated world generates (default: the packaged default); a build from
        this mirror takes the same one.
    field_weights : FieldWeights, optional
        Each discipline's latent loadings in the simulated world
        (:func:`scitaste_hf.simworld.latent.load_field_weights`; default: one set for all).
    """
    import time

    from scitaste_hf.mirror.app import build_app

    if world == "recorded":
        return build_app([recorded_dir()], rate_limit=rate_limit, daily_limit=daily_limit, latency=latency,
                         fault_rates=fault_rates, seed=seed)
    from scitaste_hf.simworld.world import generate

    tell = progress or (lambda message: None)
    started = time.perf_counter()
    tell(f"generating the candidates of {papers} benchmark papers, their citation graph and journals")
    generated = generate(papers, seed, taxonomy, field_weights)
    tell(f"indexing the world for the three services ({time.perf_counter() - started:.0f} s so far)")
    return build_app(backend=world_backend(generated), rate_limit=rate_limit, daily_limit=daily_limit,
                     latency=latency, max_page=max_page, fault_rates=fault_rates, seed=seed)
