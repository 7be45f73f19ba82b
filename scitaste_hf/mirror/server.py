"""Serving the mirror: the simulated world (or the recorded real responses) behind the services' own paths, on
the replay/limits/faults application of :mod:`scitaste_hf.mirror.app`.

Each service is under its prefix, which :mod:`scitaste_hf.sources.endpoints` owns; ``GET /health`` answers 200 once
the world is built and the socket listens.

The simulated world has a clock (:class:`WorldBackend`): set to a date (``scitaste mirror serve --as-of``, or
``POST /_control/clock`` with ``{"as_of": "YYYY-MM-DD"}``; ``null`` for the world's present), the three services
answer as they would have on that date: a work published after it is in no listing and not found, and a work's
citations (counts, per-year counts, citer listings, sorts by them) are those made by then
(:func:`world_as_of`). A prospective split is sealed with the clock at its release date and resolved after moving
it (docs/prospective.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date
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


def _rows(ptr):
    """The row of each entry of a CSR graph."""
    import numpy as np

    return np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))


def _kept(ptr, idx, keep):
    """A CSR graph with only the entries ``keep`` (one flag per entry of ``idx``)."""
    import numpy as np

    counts = np.bincount(_rows(ptr)[keep], minlength=ptr.shape[0] - 1)
    return np.concatenate([[0], np.cumsum(counts)]).astype(ptr.dtype), idx[keep]


def world_as_of(world: World, day: date) -> World:
    """``world`` as it stood on ``day``: the same works, but only the citations made by then (a work published
    later cites nothing yet). Which works are visible is each service's :attr:`visible` mask."""
    from scitaste_hf.simworld.params import EPOCH

    last = (day - EPOCH).days
    cite_ptr, cite_idx = _kept(world.cite_ptr, world.cite_idx, world.date[world.cite_idx] <= last)
    ref_ptr, ref_idx = _kept(world.ref_ptr, world.ref_idx, world.date[_rows(world.ref_ptr)] <= last)
    return replace(world, cite_ptr=cite_ptr, cite_idx=cite_idx, ref_ptr=ref_ptr, ref_idx=ref_idx)


class WorldBackend:
    """The backend of :func:`scitaste_hf.mirror.app.build_app` that answers from ``world`` as of its
    :attr:`clock` (None: the world's present, every work and citation)."""

    def __init__(self, world: World, clock: date | None = None) -> None:
        from scitaste_hf.simworld.render import journal_table_csv

        self.world = world
        #: The date the services answer as of; the mirror's ``/_control/clock`` moves it.
        self.clock = clock
        self.journal_table = journal_table_csv(world).encode()

    @lru_cache(maxsize=4)  # noqa: B019 -- one backend per mirror process: a few clocks' services kept
    def services(self, clock: date | None):
        """The three services over the world as of ``clock``."""
        from scitaste_hf.mirror.ads import AdsApi
        from scitaste_hf.mirror.arxiv import ArxivApi
        from scitaste_hf.mirror.openalex import OpenAlexApi
        from scitaste_hf.simworld.params import EPOCH

        world = self.world if clock is None else world_as_of(self.world, clock)
        visible = None if clock is None else self.world.date <= (clock - EPOCH).days
        return OpenAlexApi(world, visible), AdsApi(world, visible), ArxivApi(world, visible)

    @lru_cache(maxsize=20_000)  # noqa: B019
    def openalex_get(self, clock: date | None, path: str, query: tuple[tuple[str, str], ...]) -> tuple[int, bytes]:
        """An OpenAlex answer as the bytes sent: the world as of a date never changes, so it is kept (orjson:
        serialising is most of a lookup's cost)."""
        import orjson

        status, content = self.services(clock)[0].answer(path, dict(query))
        return status, orjson.dumps(content)

    @lru_cache(maxsize=2_000)  # noqa: B019
    def ads_post_or_get(self, clock: date | None, path: str, query: tuple[tuple[str, str], ...],
                        body: bytes) -> tuple[int, bytes]:
        """As for OpenAlex: builds against one mirror repeat their searches (a warm re-run, an --as-of release)."""
        import orjson

        status, content = self.services(clock)[1].answer(path, dict(query), body)
        return status, orjson.dumps(content)

    def __call__(self, method: str, path: str, query: dict[str, str], body: bytes) -> tuple | None:
        if path == JOURNAL_TABLE_PATH and method == "GET":
            return 200, self.journal_table, "text/csv; charset=utf-8"
        clock = self.clock
        service, below = mirror_route(path) or ("", "")
        if service == "openalex" and method == "GET":
            status, content = self.openalex_get(clock, below, tuple(sorted(query.items())))
            return status, content, "application/json"
        if service == "ads":
            status, content = self.ads_post_or_get(clock, below, tuple(query.items()), body)  # in order: ADS echoes it
            return status, content, "application/json"
        if service == "arxiv" and method == "GET":
            status, text = self.services(clock)[2].answer(below, query)
            return status, text, "application/atom+xml; charset=utf-8"
        return None


def build_mirror(world: str = "sim", *, seed: int = 0, papers: int = 6000, rate_limit: int | None = None,
                 daily_limit: int | None = DEFAULT_DAILY_LIMIT, latency: float = 0.0, max_page: int | None = None,
                 fault_rates: dict[str, float] | None = None, progress: Callable[[str], None] | None = None,
                 taxonomy: Taxonomy | None = None, field_weights: FieldWeights | None = None,
                 as_of: date | None = None):
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
    as_of : date, optional
        The simulated world's clock when it starts (:class:`WorldBackend`; None: its present).
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
    return build_app(backend=WorldBackend(generated, as_of), rate_limit=rate_limit, daily_limit=daily_limit,
                     latency=latency, max_page=max_page, fault_rates=fault_rates, seed=seed)
