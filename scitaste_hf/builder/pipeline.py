"""The build as resumable stages: collect -> snowball -> label (fuse, classify, quality check) -> index -> sample
-> publish. A build from an OpenAlex snapshot has no snowball: its index reads the snapshot
(:mod:`scitaste_hf.builder.snapshot_source`).

Everything a build makes lives in its work directory (``<out>.work`` unless told otherwise):

- ``cache/``: the clients' response cache. A build that is re-run with the same work directory sends no request
  that an earlier run already answered, whether it resumes or starts over.
- ``stages/<stage>-<fingerprint>.json``: each finished stage's result. With ``resume`` a stage whose checkpoint
  exists is not redone. The fingerprint covers the settings the stage depends on (and the previous stage's), so a
  changed seed redoes the sampling but not the collection.
- ``.lock``: held while a build runs (:mod:`scitaste_hf.builder.workdir`); a build starts by removing what a killed
  one left half-written.

A service that fails mid-build stops it with a one-line message; the next run (``--resume``) continues from the
last finished stage and from the cache, without refetching.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from scitaste_hf.builder import collect as col
from scitaste_hf.builder.layout import check_out, write_dataset
from scitaste_hf.builder.prospective import Window, blank_records, split_young
from scitaste_hf.builder.sample import PER_DISCIPLINE, SELECTED_PER_DISCIPLINE, quotas
from scitaste_hf.builder.workdir import check_folders, claimed, remove_stale
from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.schema import BIBCODE_MAP_FILE
from scitaste_hf.sources.credentials import require_secret
from scitaste_hf.sources.errors import BudgetExhausted
from scitaste_hf.taxonomy import ADS_ROUTE, OPENALEX_ROUTE, Taxonomy, load_taxonomy
from scitaste_hf.weights import DisciplineWeights, Weights, vector_for

log = logging.getLogger("scitaste_hf.builder")

STAGES = ("collect", "snowball", "label", "index", "sample", "publish")
#: Version of what the checkpoints hold: a work directory written before a change to it has its stages
#: recomputed (from the cache) rather than read without what the change added (4: each record's citation count
#: and the size of the graph; 5: the collected ADS records and snapshot works by discipline).
CHECKPOINT_VERSION = 5


class Reporter(Protocol):
    """Progress of a build: one bar per stage."""

    def start(self, stage: str, total: int | None) -> None:
        """A stage begins; ``total`` units of work (None: unknown)."""

    def advance(self, n: int) -> None:
        """``n`` more units of the current stage are done."""

    def finish(self, stage: str, note: str) -> None:
        """The stage is done (``note``: ``resumed`` when read from its checkpoint)."""


class _Silent:
    def start(self, stage: str, total: int | None) -> None:
        return None

    def advance(self, n: int) -> None:
        return None

    def finish(self, stage: str, note: str) -> None:
        return None


@dataclass(frozen=True)
class BuildConfig:
    """What to build and from where.

    Parameters
    ----------
    out : path
        The dataset folder to write.
    source : {"mirror", "live", "snapshot"}
        The offline mirror (``mirror_url``), the real services (credentials from the environment:
        ``ADS_API_TOKEN``, optionally ``OPENALEX_API_KEY`` / ``OPENALEX_MAILTO``) or an OpenAlex snapshot
        (``snapshot``; no request is sent).
    mirror_url : str, optional
        The mirror's URL as ``scitaste mirror serve`` prints it.
    snapshot : path, optional
        The OpenAlex snapshot of ``source="snapshot"``: its root or its works folder.
    work_dir : path, optional
        Cache and checkpoints; ``<out>.work`` when None.
    seed : int
        Seed of the sampling.
    per_discipline, selected_per_discipline : int
        Papers kept per discipline (both splits) and of the ``selected`` split.
    years : (int, int)
        Collection window.
    resume : bool
        Reuse the checkpoints of finished stages.
    overwrite : bool
        Replace an existing ``out``.
    max_retries : int
        Retries of a failed request before the build stops.
    journal_table : path, optional
        A licensed journal table (issn, name, impact_factor, jcr_quartile, cas_zone; CSV or Parquet) for
        dimension G. Without it a mirror build uses the simulated world's synthetic table and a live build the
        OpenAlex impact proxy, which has no JCR quartiles or CAS zones.
    as_of : date, optional
        Build the release the services would have given on this date: works published after it are left out
        everywhere (candidates, references, citers) and citation counts are those up to it. None: the services'
        present state.
    weights : mapping or DisciplineWeights, optional
        The composite's weights (:func:`scitaste_hf.weights.load_weights`: one vector, or one per discipline, each
        record's picked by the discipline it is labelled with); the packaged default when None.
    previous : path, optional
        A release this build refreshes (a folder ``scitaste build`` wrote): within the same quotas and balance,
        its papers are kept before new ones and its selected papers selected again before others
        (:func:`~scitaste_hf.builder.sample.sample_splits`).
    prospective_months : int, optional
        Add a ``prospective`` split (docs/prospective.md): the papers published in this many months up to the
        build's date (``as_of``, else today), taken out of the pool before the index and released without their
        gold. None: no such split, and the build is what it was without the option.
    cohort : Window, optional
        Collect only the papers published in this window (a prospective split's), as of ``as_of``, and score them
        against each other alone: what ``scitaste resolve`` builds (:meth:`Build.indexed_records`).
    """

    out: Path
    source: str = "mirror"
    mirror_url: str | None = None
    snapshot: Path | None = None
    work_dir: Path | None = None
    seed: int = 0
    per_discipline: int = PER_DISCIPLINE
    selected_per_discipline: int = SELECTED_PER_DISCIPLINE
    years: tuple[int, int] = col.YEARS
    resume: bool = False
    overwrite: bool = False
    max_retries: int = 5
    journal_table: Path | None = None
    as_of: date | None = None
    weights: Weights | None = None
    previous: Path | None = None
    prospective_months: int | None = None
    cohort: Window | None = None

    @property
    def work(self) -> Path:
        """The work directory."""
        return Path(self.work_dir) if self.work_dir else Path(f"{self.out}.work")

    @property
    def window(self) -> tuple[int, int]:
        """The publication years collected: :attr:`years`, ending with the as-of date's year at the latest (a
        cohort's years, within them)."""
        first, last = (self.years[0], min(self.years[1], self.as_of.year)) if self.as_of else self.years
        if self.cohort is not None:
            return max(first, self.cohort.years[0]), min(last, self.cohort.years[1])
        return first, last

    @property
    def prospective_window(self) -> Window | None:
        """The publication window of the prospective split (:attr:`prospective_months` up to the build's date)."""
        if self.prospective_months is None:
            return None
        return Window.before(self.as_of or date.today(), self.prospective_months)

    @property
    def published(self) -> str | None:
        """The OpenAlex filter every candidate meets: published in the cohort, else by the as-of date."""
        return self.cohort.cohort_filter if self.cohort is not None else col.published_by(self.as_of)


@dataclass
class BuildResult:
    """What a build produced and met on the way."""

    out: Path
    splits: dict[str, list[dict[str, Any]]]
    failures: list[dict[str, str]]
    short_cells: list[list[Any]]
    short_disciplines: list[list[Any]]
    provenance: dict[str, dict[str, int]]
    #: What the index was computed on: papers scored, works around them, citations of the papers.
    graph: dict[str, int]
    short_listings: int = 0
    #: Where dimension G's figures come from, and whether they include the JCR and CAS partitions.
    journal_table: str = ""
    journal_partitions: bool = True
    stages_resumed: list[str] = field(default_factory=list)
    requests: int = 0
    #: With ``previous``: its selected papers, and how many of them this release selects again.
    previous_selected: list[int] | None = None
    #: The snapshot a build read (:meth:`~scitaste_hf.builder.snapshot_source.Snapshot.describe`); empty for the
    #: services.
    source: dict[str, Any] = field(default_factory=dict)
    #: With ``prospective_months``: the prospective split's records (no gold); None without it.
    prospective: list[dict[str, Any]] | None = None


def _write_json(path: Path, data: Any) -> None:
    import orjson

    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, orjson.dumps(data, option=orjson.OPT_SORT_KEYS))


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Clients:
    """The three clients of a build, made on first use (a fully resumed build makes none), all caching in the
    work directory."""

    def __init__(self, config: BuildConfig) -> None:
        self.config = config
        self._made: dict[str, Any] = {}

    def settings(self) -> dict[str, dict[str, Any]]:
        """The keyword arguments of each service's client beyond the cache: none for the real services (their
        defaults), :func:`~scitaste_hf.sources.endpoints.mirror_clients` for the mirror."""
        if self.config.source == "live":
            return {"ads": {}, "openalex": {}, "arxiv": {}}
        from scitaste_hf.sources.endpoints import mirror_clients

        return mirror_clients(self.config.mirror_url or "")

    def get(self, name: str) -> Any:
        """The client of one service: ``ads``, ``openalex`` or ``arxiv``."""
        if name in self._made:
            return self._made[name]
        from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient

        cls = {"ads": ADSClient, "openalex": OpenAlexClient, "arxiv": ArxivClient}[name]
        client = cls(cache_dir=str(self.config.work / "cache"), max_retries=self.config.max_retries,
                     **self.settings()[name])
        self._made[name] = client
        return client

    def requests(self) -> int:
        """Requests sent so far (cache hits not counted)."""
        return sum(c.stats.sent for c in self._made.values())

    def short_listings(self) -> int:
        """Listings so far that ended with fewer records than the service announced (answers from the cache
        included)."""
        return sum(c.stats.short_listings for c in self._made.values())

    def close(self) -> None:
        """Close every client made."""
        for c in self._made.values():
            c.close()


#: The sources a build reads (:attr:`BuildConfig.source`).
SOURCES = ("mirror", "live", "snapshot")


def check_config(config: BuildConfig, taxonomy: Taxonomy | None = None) -> None:
    """Refuse a configuration that cannot build, before anything is read or fetched: its source and what that
    source needs, then its quotas and its as-of date. ``taxonomy`` (the packaged one when None) says whether a
    build from the live services needs an ADS token: only a discipline of the ADS route is collected from ADS.

    Raises
    ------
    ScitasteError
        One line, naming the :class:`BuildConfig` fields at fault (``scitaste build`` checks its flags first, so
        its users read the flags' names).
    """
    _check_source(config, taxonomy or load_taxonomy())
    if config.per_discipline < 1 or not 0 < config.selected_per_discipline <= config.per_discipline:
        raise ScitasteError(f"per_discipline must be >= 1 and selected_per_discipline between 1 and it, got "
                            f"{config.per_discipline} and {config.selected_per_discipline}")
    if config.as_of is not None and not date(config.years[0], 1, 1) <= config.as_of <= date.today():
        raise ScitasteError(f"as_of {config.as_of.isoformat()} must lie between {config.years[0]}-01-01 (the first "
                            "year collected) and today")
    # Reading the window refuses a bad number of months now, before anything is fetched.
    if config.prospective_window is not None and config.source == "snapshot":
        raise ScitasteError("prospective_months is not supported with source 'snapshot' (the index counts every "
                            "citer the snapshot holds); build from the services as of a date")
    if config.cohort is not None and (config.as_of is None or config.cohort.end > config.as_of
                                      or config.prospective_months is not None):
        raise ScitasteError("cohort needs an as_of date on or after its end, and no prospective_months")


def _check_source(config: BuildConfig, taxonomy: Taxonomy) -> None:
    """The source is known and has what it needs (a snapshot its folder, the mirror its URL, the live services an
    ADS token where the taxonomy has an ADS-route discipline), and nothing it does not read."""
    source = config.source
    if source not in SOURCES:
        raise ScitasteError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    if (source == "snapshot") != (config.snapshot is not None):
        raise ScitasteError(f"snapshot (the snapshot's folder) is read exactly when source is 'snapshot'; got source "
                            f"{source!r} and snapshot {config.snapshot}")
    if source == "snapshot" and config.mirror_url:
        raise ScitasteError("mirror_url is for source 'mirror'; a build from a snapshot sends no request")
    if source == "snapshot" and config.as_of is not None:
        raise ScitasteError("as_of is not supported with source 'snapshot' (the index counts every citer the "
                            "snapshot holds); build from a snapshot of that date instead")
    if source == "mirror" and not config.mirror_url:
        raise ScitasteError("source 'mirror' needs mirror_url (the URL `scitaste mirror serve` prints)")
    if source == "live" and taxonomy.by_route(ADS_ROUTE):
        require_secret(None, "ADS_API_TOKEN", "a build from the live services needs a NASA ADS API token")


class Build:
    """One build; :meth:`run` runs its stages.

    Parameters
    ----------
    config : BuildConfig
    taxonomy : Taxonomy, optional
        The packaged one when None.
    reporter : Reporter, optional
        Progress display; silent when None.
    """

    def __init__(self, config: BuildConfig, taxonomy: Taxonomy | None = None, reporter: Reporter | None = None):
        check_config(config, taxonomy)
        from scitaste_hf.builder.journals import read_licensed

        self.config = config
        self.snapshot = None
        if config.snapshot is not None:
            from scitaste_hf.builder.snapshot_source import open_snapshot

            self.snapshot = open_snapshot(config.snapshot)
        self.licensed = read_licensed(config.journal_table) if config.journal_table else None
        self.previous: dict[str, str] = {}
        if config.previous is not None:
            from scitaste_hf.release.folder import read_release

            self.previous = {b: r["split"] for b, r in read_release(config.previous, "--previous").records().items()}
        self.taxonomy = taxonomy or load_taxonomy()
        if config.weights is not None:  # a discipline without a vector stops the build now, not after collecting
            for discipline in self.taxonomy.names:
                vector_for(config.weights, discipline)
            if isinstance(config.weights, DisciplineWeights):
                config.weights.check_disciplines(self.taxonomy.names, "the build's taxonomy")
        self.reporter = reporter or _Silent()
        self.clients = Clients(config)
        self.resumed: list[str] = []
        self.quotas = {}
        for d in self.taxonomy.names:
            self.quotas.update(quotas(config.per_discipline, [c.id for c in self.taxonomy.of(d)]))

    # -------------------------------------------------------------------------------------------- stages

    def _stage(self, name: str, key: str, compute: Callable[[], Any]) -> Any:
        import orjson

        path = self.config.work / "stages" / f"{name}-{key}.json"
        if self.config.resume and path.exists():
            try:
                saved = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError as exc:
                # A checkpoint cut short (a crash before the disk had it all): the stage runs again, its requests
                # answered from the cache.
                log.warning("stage %s: ignoring the unreadable checkpoint %s (%s)", name, path, exc)
            else:
                self.reporter.start(name, 1)
                self.reporter.advance(1)
                self.reporter.finish(name, "resumed")
                self.resumed.append(name)
                return saved
        try:
            result = compute()
        except ScitasteError as exc:
            if self.snapshot is not None:
                raise ScitasteError(f"{exc} -- stage {name} stopped; the stages finished before it are kept in "
                                    f"{self.config.work}: run the same command with --resume to continue") from None
            when = "once the budget resets" if isinstance(exc, BudgetExhausted) else "to continue"
            raise ScitasteError(f"{exc} -- stage {name} stopped; what was fetched is cached in {self.config.work}: "
                                f"run the same command with --resume {when}") from None
        _write_json(path, result)
        self.reporter.finish(name, "done")
        # What the next stages see is the checkpoint as read back (key order included), so that a resumed
        # build asks exactly the requests of an uninterrupted one.
        return orjson.loads(path.read_bytes())

    def _collect(self) -> dict[str, Any]:
        cfg = self.config
        if self.snapshot is not None:
            from scitaste_hf.builder import snapshot_source

            self.reporter.start("collect", snapshot_source.collect_steps(self.taxonomy))
            return snapshot_source.collect(self.snapshot, self.taxonomy, self.quotas, cfg.per_discipline, cfg.window,
                                           cfg.work, self.reporter.advance)
        short_before = self.clients.short_listings()
        from_ads = self.taxonomy.by_route(ADS_ROUTE)
        others = [d.name for d in self.taxonomy.by_route(OPENALEX_ROUTE)]
        n_ads_cells = sum(len(self.taxonomy.of(d.name)) for d in from_ads)
        n_cells = len(self.taxonomy.cells) - n_ads_cells
        self.reporter.start("collect", n_ads_cells + len(from_ads) + n_cells + 2 * cfg.per_discipline * len(from_ads))
        tick = self.reporter.advance
        ads = {d.name: col.collect_ads(self.clients.get("ads"), d, self.taxonomy.of(d.name), self.quotas,
                                       cfg.per_discipline, years=cfg.window, tick=tick) for d in from_ads}
        cells = col.collect_openalex(self.clients.get("openalex"), self.taxonomy, self.quotas, disciplines=others,
                                     also=cfg.published, tick=tick)
        ads_records = [r for records in ads.values() for r in records]
        by_doi = col.openalex_by_doi(self.clients.get("openalex"), (r.get("doi") for r in ads_records), tick=tick)
        arxiv = col.arxiv_entries(self.clients.get("arxiv"), (r["arxiv_id"] for r in ads_records if r["arxiv_id"]),
                                  tick=tick)
        return {"ads": ads, "cells": cells, "by_doi": by_doi, "arxiv": arxiv,
                "short_listings": self.clients.short_listings() - short_before}

    @staticmethod
    def _focal(collected: Mapping[str, Any]) -> list[dict[str, Any]]:
        # Grouped by field (the order they were collected in): works of a batch share references and citers.
        seen: dict[str, dict[str, Any]] = {}
        ads_works = (w for ws in collected.get("ads_works", {}).values() for w in ws)
        for work in [*collected["by_doi"].values(), *ads_works, *(w for ws in collected["cells"].values() for w in ws)]:
            seen.setdefault(work["id"], work)
        return list(seen.values())

    def _snowball(self, collected: Mapping[str, Any]) -> dict[str, Any]:
        short_before = self.clients.short_listings()
        focal = self._focal(collected)
        source_ids = {w["source_id"] for w in focal if w.get("source_id")}
        plan = col.snowball_plan(focal)
        self.reporter.start("snowball", len(plan.filters()) + len(source_ids))
        openalex = self.clients.get("openalex")
        around = col.snowball(openalex, focal, plan, also=col.published_by(self.config.as_of),
                              tick=self.reporter.advance)
        sources = col.journal_sources(openalex, source_ids, tick=self.reporter.advance)
        return {"works": around, "sources": sources, "short_listings": self.clients.short_listings() - short_before}

    def _label(self, collected: Mapping[str, Any]) -> dict[str, Any]:
        from scitaste_hf.builder.classify import label
        from scitaste_hf.builder.fuse import fuse_candidates
        from scitaste_hf.builder.quality import check

        self.reporter.start("label", 3)
        fused = fuse_candidates(collected["ads"], collected["by_doi"], collected["arxiv"], collected["cells"],
                                self.taxonomy, collected.get("ads_works", {}))
        self.reporter.advance(1)
        labelled = label(fused, self.taxonomy)
        self.reporter.advance(1)
        kept, failures = check(labelled, self.config.years, self.config.as_of)
        self.reporter.advance(1)
        provenance: dict[str, dict[str, int]] = {}
        for p in fused:
            for key, src in p["sources"].items():
                provenance.setdefault(key, {}).setdefault(src, 0)
                provenance[key][src] += 1
        if self.config.as_of is not None:
            # The index counts an as-of build's citations itself, from the citers' OpenAlex dates (builder/score.py).
            provenance["citation_count"] = {f"openalex citers to {self.config.as_of.isoformat()}":
                                            sum(bool(p["openalex_id"]) for p in fused)}
        # A paper no cascade stage labels has no sub-discipline to be sampled in: it enters neither split (nor the
        # index's reference population) and is counted with its reason.
        unclassified = [{"bibcode": p["bibcode"], "reason": "unclassified",
                         "detail": "no cascade stage labels it; in neither split"}
                        for p in kept if p["subcategory_id"] is None]
        labelled_papers = [p for p in kept if p["subcategory_id"] is not None]
        if self.config.cohort is not None:  # NASA ADS is asked by year: the days outside the window go here
            labelled_papers = [p for p in labelled_papers if self.config.cohort.holds(p.get("date"))]
        return {"papers": labelled_papers, "failures": failures + unclassified, "provenance": provenance}

    def _index(self, collected: Mapping[str, Any], around: Mapping[str, Any] | None, labelled: Mapping[str, Any],
               table: Any) -> dict[str, Any]:
        from scitaste_hf.builder.score import as_of_graph, score

        self.reporter.start("index", 1)
        if self.snapshot is not None:
            from scitaste_hf.builder.snapshot_source import index

            indexed = index(self.snapshot, labelled["papers"], {w["id"]: w for w in self._focal(collected)}, table,
                            self.config.journal_table, self.config.work, self.config.weights)
            self.reporter.advance(1)
            return indexed
        papers, works, around_works = labelled["papers"], {w["id"]: w for w in self._focal(collected)}, around["works"]
        if self.config.as_of is not None:
            # The quality check of an as-of build kept only papers with an OpenAlex record published by the date.
            works, around_works, cited = as_of_graph(works, around_works, self.config.as_of)
            papers = [{**p, "citation_count": cited[p["openalex_id"]]} for p in papers]
        young = None
        if (window := self.config.prospective_window) is not None:
            papers, young = split_young(papers, window)
        records = score(papers, works, around_works, around["sources"], self.config.weights, table)
        self.reporter.advance(1)
        out = {"records": records, "graph": {"papers": len(records), "works_around": len(around_works),
                                             "citations": sum(r["citation_count"] for r in records)}}
        if young is not None:
            from scitaste_hf.builder.score import journal_table, journal_tiers

            # A journal's tier is its standing among the whole pool's journals, as for the retrospective records.
            tiers = journal_tiers([*papers, *young], works,
                                  table if table is not None else journal_table(around["sources"]))[len(papers):]
            out["prospective"] = blank_records(young, tiers)
        return out

    def _sample(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        from scitaste_hf.builder.sample import sample_splits

        self.reporter.start("sample", 1)
        splits = sample_splits(records, self.taxonomy, seed=self.config.seed,
                               per_discipline=self.config.per_discipline,
                               selected_per_discipline=self.config.selected_per_discipline, previous=self.previous)
        self.reporter.advance(1)
        return {"selected": splits.selected, "backup": splits.backup, "short_cells": splits.short_cells,
                "short_disciplines": splits.short_disciplines, "previous_selected": splits.previous_selected}

    def _publish(self, sampled: Mapping[str, Any], summary: str, graph: Mapping[str, int],
                 source: Mapping[str, Any], prospective: list[dict[str, Any]] | None) -> None:
        from scitaste_hf.release.folder import CITATION_COUNTS_FILE, provenance
        from scitaste_hf.weights import DEFAULT_WEIGHTS

        self.reporter.start("publish", 1)
        records = [*sampled["selected"], *sampled["backup"]]
        mapping = {r["bibcode"]: r["openalex_id"] for r in records if r.get("openalex_id")}
        citations = {r["bibcode"]: r["citation_count"] for r in records}
        weights = self.config.weights or DEFAULT_WEIGHTS
        recorded = provenance(self.config.as_of, weights, self.taxonomy, graph)
        if (window := self.config.prospective_window) is not None:
            recorded["prospective"] = window.record()
        synthetic = self.config.source == "mirror"
        if source:
            recorded["source"], synthetic = dict(source), source["synthetic"]
        write_dataset(self.config.out, {"selected": sampled["selected"], "backup": sampled["backup"]},
                      weights, synthetic=synthetic, summary=summary, overwrite=self.config.overwrite,
                      provenance=recorded, ads_disciplines=[d.name for d in self.taxonomy.by_route(ADS_ROUTE)],
                      extra_files={BIBCODE_MAP_FILE: json.dumps(mapping, indent=1, sort_keys=True) + "\n",
                                   CITATION_COUNTS_FILE: json.dumps(citations, indent=1, sort_keys=True) + "\n"},
                      prospective=prospective)
        self.reporter.advance(1)
        self.reporter.finish("publish", "done")

    # ---------------------------------------------------------------------------------------------- run

    def run(self) -> BuildResult:
        """Run every stage (reusing finished ones when resuming) and write the dataset.

        Raises
        ------
        ScitasteError
            When ``out`` exists without ``overwrite``, when ``out``'s folder or the work directory cannot be
            written, when another build holds the work directory, or when a service fails (the message says how
            to resume).
        """
        cfg = self.config
        check_out(Path(cfg.out), cfg.overwrite)
        check_folders(Path(cfg.out), cfg.work)
        with claimed(cfg.work):
            remove_stale(Path(cfg.out), cfg.work)
            return self._run_stages()

    def _journal_table(self) -> Any:
        """The licensed table, else the mirror's synthetic one or a snapshot's open proxy (the one ``scitaste
        index`` reads), else None (the OpenAlex proxy of the snowball's sources)."""
        from scitaste_hf.builder.journals import mirror_table

        if self.licensed is None and self.snapshot is not None:
            from scitaste_hf.snapshot.reader import read_journals

            return read_journals(self.snapshot.path)
        if self.licensed is not None or self.config.source != "mirror":
            return self.licensed
        return mirror_table(self.config.mirror_url or "", self.config.work, self.config.max_retries)

    def indexed_records(self) -> dict[str, Any]:
        """Run the stages up to the index (reusing finished ones when resuming) and return what the index stage
        made, writing no dataset: ``records`` (every scored record of the pool) and ``graph`` (what it was computed
        on, as :attr:`BuildResult.graph`); what a resolution of a prospective split scores (``scitaste resolve``).

        Raises
        ------
        ScitasteError
            As :meth:`run`, but for an existing ``out``, which this does not write.
        """
        cfg = self.config
        check_folders(Path(cfg.out), cfg.work)
        with claimed(cfg.work):
            try:
                return self._up_to_index()[-1]
            finally:
                self.clients.close()

    def _up_to_index(self) -> tuple[Any, ...]:
        """The stages from collect to index: what each returned, the journal table and the index's key."""
        from scitaste_hf.builder.journals import digest
        from scitaste_hf.release.folder import weights_record

        cfg = self.config
        if self.snapshot is None:
            where: Any = {name: settings.get("base_url") for name, settings in self.clients.settings().items()}
        else:
            where = self.snapshot.fingerprint()
        k_collect = _fingerprint(CHECKPOINT_VERSION, cfg.source, where, cfg.per_discipline, cfg.years, cfg.as_of,
                                 repr(self.taxonomy),  # cells, and the disciplines' codes (in the ids)
                                 *([cfg.cohort.record()] if cfg.cohort is not None else []))
        collected = self._stage("collect", k_collect, self._collect)
        around = (self._stage("snowball", k_collect, lambda: self._snowball(collected))
                  if self.snapshot is None else None)
        labelled = self._stage("label", k_collect, lambda: self._label(collected))
        table = self._journal_table()
        window = cfg.prospective_window
        k_index = _fingerprint(k_collect, digest(table), *(
            [weights_record(cfg.weights)] if cfg.weights is not None else []),
            *([window.record()] if window is not None else []))
        indexed = self._stage("index", k_index, lambda: self._index(collected, around, labelled, table))
        return collected, around, labelled, table, k_index, indexed

    def _run_stages(self) -> BuildResult:
        from scitaste_hf.builder.journals import PARTITIONS_MISSING
        from scitaste_hf.builder.summary import card_summary
        from scitaste_hf.index.journals import OPENALEX_PROXY_LABEL

        cfg = self.config
        try:
            collected, around, labelled, table, k_index, indexed = self._up_to_index()
            k_sample = _fingerprint(k_index, cfg.seed, cfg.selected_per_discipline,
                                    *([sorted(self.previous.items())] if self.previous else []))
            sampled = self._stage("sample", k_sample, lambda: self._sample(indexed["records"]))
            short = collected["short_listings"] + (around["short_listings"] if around else 0)
            result = BuildResult(out=Path(cfg.out), splits={"selected": sampled["selected"],
                                                            "backup": sampled["backup"]},
                                 failures=labelled["failures"], short_cells=sampled["short_cells"],
                                 short_disciplines=sampled["short_disciplines"],
                                 provenance=labelled["provenance"],
                                 short_listings=short,
                                 journal_table=table.label if table is not None else OPENALEX_PROXY_LABEL,
                                 journal_partitions=table is not None and any(
                                     e.jcr_quartile or e.cas_zone for e in table.entries),
                                 graph=indexed["graph"], stages_resumed=self.resumed,
                                 previous_selected=sampled.get("previous_selected"),
                                 source=self.snapshot.describe() if self.snapshot is not None else {},
                                 prospective=indexed.get("prospective"))
            if not result.journal_partitions:
                log.warning("%s", PARTITIONS_MISSING)
            self._publish(sampled, card_summary(result, self.taxonomy), indexed["graph"], result.source,
                          result.prospective)
            result.requests = self.clients.requests()
            return result
        finally:
            self.clients.close()
