"""The expert ratings as a ``datasets`` configuration, ``expert_ratings``: one row per rating, the rater's id
pseudonymised (:meth:`~scitaste_hf.ratings.store.RatingStore.pseudonym`), the date of the rating without its time
(a time of day could be matched with a rater's public activity), rows sorted so that the same ratings always give
the same bytes.

``datasets.load_dataset(FOLDER_OR_REPO, "expert_ratings", split="train")`` reads it; its rows carry the benchmark
records' ``innovation_score`` and ``dimension_scores`` fields, so that a row can be scored like a gold record.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.schema import DIMENSIONS

if TYPE_CHECKING:
    import datasets

    from scitaste_hf.ratings.store import RatingStore

#: The configuration's name.
CONFIG = "expert_ratings"
#: Its one file, in the dataset's layout.
FILE = f"{CONFIG}/{CONFIG}-00000-of-00001.parquet"

_CARD = """
# Expert ratings of SciTaste-Bench papers

Ratings given in the Annotate tab of the SciTaste-Bench leaderboard Space: for each paper, the innovation score and
the seven dimensions of the Academic Taste Index, each 0-100 relative to the paper's discipline, by experts who saw
the title, abstract, year and venue only (never the bibliometric gold or other experts' ratings).

- `rater`: a pseudonym, a keyed hash of the rater's account with a secret salt kept by the Space; the same rater
  always has the same pseudonym, and no list of usernames can be hashed to find who is who.
- `rated_on`: the day of the rating (UTC).
- `bibcode`, `discipline`: the paper, as in the benchmark's records.
- `innovation_score`, `dimension_scores`: the rating.

{count} ratings of {papers} papers by {raters} raters. `scitaste ratings report` computes the agreement between
raters and with the bibliometric gold (docs/ratings.md of scitaste-hf).
"""


def rating_features() -> datasets.Features:
    """The ``datasets.Features`` of one row of :data:`CONFIG`."""
    from datasets import Features, Value

    string = Value("string")
    return Features({"rater": string, "bibcode": string, "discipline": string, "rated_on": string,
                     "innovation_score": Value("float64"),
                     "dimension_scores": {key: Value("float64") for key in DIMENSIONS}})


def export_rows(store: RatingStore) -> list[dict[str, Any]]:
    """The store's ratings as rows of :data:`CONFIG`, sorted by paper and pseudonym."""
    rows = [{"rater": store.pseudonym(r["rater"]), "bibcode": r["bibcode"], "discipline": r["discipline"],
             "rated_on": r["rated_at"][:10], "innovation_score": r["innovation_score"],
             "dimension_scores": {k: r[k] for k in DIMENSIONS}} for r in store.ratings()]
    return sorted(rows, key=lambda r: (r["bibcode"], r["rater"]))


def export_files(store: RatingStore) -> list[tuple[str, bytes]]:
    """The configuration's files as (path in the dataset, bytes): the Parquet file and a card whose front matter
    declares the configuration."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard, DatasetCardData

    rows = export_rows(store)
    table = pa.Table.from_pylist(rows, schema=rating_features().arrow_schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    data = DatasetCardData(configs=[{"config_name": CONFIG, "data_files": [{"split": "train", "path": FILE}]}],
                           tags=["expert-ratings", "scitaste"])
    # The card states the features and the number of rows, as push_to_hub's does: besides informing the viewer,
    # it makes a folder exported again with more ratings a new dataset to datasets' cache, which for a local folder
    # looks at the card and the files' names, not at their contents or times.
    splits = SplitDict()
    splits.add(SplitInfo(name="train", num_bytes=table.nbytes, num_examples=len(rows)))
    info = DatasetInfo(features=rating_features(), splits=splits, config_name=CONFIG)
    DatasetInfosDict({CONFIG: info}).to_dataset_card_data(data)
    body = _CARD.format(count=len(rows), papers=len({r["bibcode"] for r in rows}),
                        raters=len({r["rater"] for r in rows}))
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}")
    return [(FILE, buffer.getvalue()), ("README.md", str(card).encode("utf-8"))]


def export(store: RatingStore, out_dir: str | Path) -> Path:
    """Write the configuration into ``out_dir`` (created if missing), each file atomically; returns the folder."""
    out = Path(out_dir)
    for name, data in export_files(store):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
    return out
