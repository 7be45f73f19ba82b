"""Opening the leaderboard the way the Space and ``scitaste space`` do: find the gold labels, attach the Hub
copy when configured, and give an empty offline board the bundled synthetic example run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.service import RATE_LIMIT, Leaderboard
from scitaste_hf.records import load_records

_EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")
#: A weights file in the board's folder whose ``weights_interval`` (as ``scitaste weights derive --json`` writes it)
#: says how well the gold's weights are known, in place of the packaged default's interval (docs/leaderboard.md#order).
GOLD_WEIGHTS_FILE = "gold_weights.json"
#: A folder in the board's folder of other releases of the board's papers (each a dataset folder or records file,
#: its ``selected`` split read): the board's gold redraws the citation window from them too.
GOLD_RELEASES_DIR = "gold_releases"


def gold_draws(data_dir: str | Path, gold: Sequence[Mapping[str, Any]] | None = None):
    """How the board at ``data_dir`` redraws its gold ``gold``: the default weights with the widths of the intervals
    of :data:`GOLD_WEIGHTS_FILE` where the folder has one, else with the interval the package gives the default
    weights (:func:`~scitaste_hf.scoring.gold_uncertainty.default_draws`); and, where the folder has
    :data:`GOLD_RELEASES_DIR`, each release in it as another citation window of the same papers
    (:func:`~scitaste_hf.scoring.gold_uncertainty.release_rows`).

    Raises
    ------
    InvalidInput
        For a file that is not JSON, or whose intervals do not name the seven dimensions within 0-1; for a release
        that cannot be read or holds none of the board's papers; for releases without ``gold``.
    """
    from scitaste_hf.bounded_load import parse_json, read_text
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.scoring.gold_uncertainty import GoldDraws, default_draws, release_rows, weight_intervals
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    folder = Path(data_dir) / GOLD_RELEASES_DIR
    sources = sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []
    if sources and gold is None:
        raise InvalidInput(f"{folder}: other releases are redrawn against the board's gold, which was not given")
    releases = []
    for source in sources:
        try:
            records = load_records(str(source), "selected")
        except ScitasteError as exc:
            raise InvalidInput(f"{source}: not a release of the board's papers ({exc})") from None
        releases.append(release_rows(gold, records, str(source)))
    path = Path(data_dir) / GOLD_WEIGHTS_FILE
    intervals = default_draws().intervals
    if path.is_file():
        intervals = weight_intervals(parse_json(read_text(path, "gold weights file"), str(path)), str(path))
    return GoldDraws(DEFAULT_WEIGHTS, intervals, tuple(releases))


def gold_source(data_dir: str | Path, gold: str | None = None) -> tuple[str, bool]:
    """Where the gold labels come from, and whether they are the bundled synthetic example.

    In order: ``gold`` (a path or Hub id), the ``SCITASTE_GOLD`` environment variable, a dataset folder
    ``DATA/dataset`` (written by ``scitaste demo``), the bundled synthetic example.
    """
    chosen = gold or constants.read(constants.SCITASTE_GOLD)
    if chosen:
        return chosen, False
    dataset = Path(data_dir) / "dataset"
    if dataset.is_dir():  # written by `scitaste demo`: synthetic when its card's metadata is tagged so
        return str(dataset), "synthetic" in _card_tags(dataset / "README.md")
    return str(_EXAMPLES.joinpath("gold.jsonl")), True


def backup_split(source: str) -> list[dict[str, Any]] | None:
    """The ``backup`` split beside the gold labels, which the board's no-information floors are learned from: a
    dataset folder or Hub id has one; a file of records (the bundled example) has none, and then the floors come
    from the gold labels themselves. None also when the dataset lacks the split."""
    if Path(source).is_file():
        return None
    try:
        return load_records(source, "backup") or None
    except ScitasteError:
        return None


def _card_tags(card: Path) -> list[str]:
    """The ``tags`` of a dataset card's YAML metadata (empty without a card or metadata)."""
    from huggingface_hub import metadata_load

    if not card.is_file():
        return []
    try:
        meta = metadata_load(card) or {}
    except ValueError:  # a metadata block that is not a mapping declares nothing
        return []
    return [str(t) for t in meta.get("tags") or []]


def hub_mirror_from_env(*, private_only: bool = False):
    """A Hub copy to ``SCITASTE_RESULTS_REPO`` with ``HF_TOKEN`` when both are set, else None (no copy). Each store
    gets one of its own (:class:`~scitaste_hf.net.hub_copy.HubMirror`); ``private_only`` copies only
    while that repo is private."""
    repo, token = constants.read(constants.SCITASTE_RESULTS_REPO), constants.read(constants.HF_TOKEN)
    if not (repo and token):
        return None
    from scitaste_hf.net.hub_copy import HubMirror

    return HubMirror(repo, token, private_only=private_only)


def open_leaderboard(data_dir: str | Path, gold: str | None = None) -> tuple[Leaderboard, bool]:
    """The leaderboard over ``data_dir``; returns it and whether its gold labels are the synthetic example.

    With ``HF_TOKEN`` and ``SCITASTE_RESULTS_REPO`` set, every new run is also copied to that dataset repo, and its
    per-paper details published as a dataset repo of its own beside it (private when its submitter chose so:
    :class:`~scitaste_hf.leaderboard.details.DetailsQueue`); a copy or publication that failed (the Hub unreachable)
    is retried, on start, and with the next run. The floors are learned from
    the ``backup`` split when the gold source has one (:func:`backup_split`), and the gold is redrawn as
    :func:`gold_draws` says.
    """
    source, synthetic = gold_source(data_dir, gold)
    records = load_records(source, "selected")
    board = Leaderboard(data_dir, records, mirror=hub_mirror_from_env(),
                        details=hub_mirror_from_env(),
                        rate_limit=constants.submit_limit(RATE_LIMIT), backup=backup_split(source),
                        gold_draws=gold_draws(data_dir, records))
    if synthetic and not board.store.rows():
        board.submit(Path(str(_EXAMPLES.joinpath("predictions.jsonl"))).read_bytes(), "synthetic-example-model",
                     "dimagent_v3", "scitaste-hf (synthetic example)", kind="example")
    return board, synthetic


def reported_results() -> dict[str, Any]:
    """Results reported in the paper: shown apart from scored runs, never mixed with them."""
    return json.loads(resources.files("scitaste_hf").joinpath("data/reported_paper.json").read_text("utf-8"))
