"""Writing the dataset in the layout that ``load_dataset`` reads from the Hub: ``data/<split>-*.parquet`` and a
``README.md`` whose YAML declares the two splits and the features, followed by the dataset card.

The Parquet files are written by pyarrow with the ``datasets`` features in their schema metadata, rows sorted
by bibcode: the same records give byte-identical files.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import temporary_dir
from scitaste_hf.schema import CITATION, DIMENSION_LETTERS, DIMENSIONS, SPLITS, record_features


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return label
    return "100K<n<1M"


def card(counts: Mapping[str, int], weights: Mapping[str, float], *, synthetic: bool, summary: str = "",
         num_bytes: Mapping[str, int] | None = None) -> str:
    """The README.md: YAML metadata (splits, features, licence, size) and the dataset card."""
    import yaml

    features = record_features()
    meta = {
        "license": "cc0-1.0" if synthetic else "other",
        "pretty_name": "SciTaste-Bench" + (" (synthetic demo build)" if synthetic else ""),
        "language": ["en"],
        "size_categories": [_size_category(sum(counts.values()))],
        "tags": ["science", "research-evaluation", "bibliometrics", "llm-evaluation"]
        + (["synthetic"] if synthetic else []),
        "configs": [{"config_name": "default", "data_files": [
            {"split": s, "path": f"data/{s}-*.parquet"} for s in SPLITS]}],
        "dataset_info": {"features": features._to_yaml_list(),
                         # num_bytes (Arrow size) completes the split info that `datasets` checks
                         "splits": [{"name": s, "num_bytes": int((num_bytes or {}).get(s, 0)),
                                     "num_examples": int(counts.get(s, 0))} for s in SPLITS]},
    }
    weight_rows = "\n".join(f"| {DIMENSION_LETTERS[k]} | `{k}` | {weights[k]:.6f} |" for k in DIMENSIONS)
    banner = ("> **Synthetic demo build.** Every record comes from the simulated world of scitaste-hf: it shows the "
              "pipeline end to end and is not the benchmark.\n\n" if synthetic else "")
    return f"""---
{yaml.safe_dump(meta, sort_keys=False).strip()}
---

# SciTaste-Bench

{banner}Can language models judge the innovativeness ("research taste") of scientific papers? Each record is a paper
from one of six disciplines with its Academic Taste Index: an innovation score (0-100) and seven dimension scores
computed from bibliometric data. Models are asked to predict them; see the `scitaste_wape` and `scitaste_scheme1`
metrics of scitaste-hf.

## Splits

| split | papers | use |
|---|---|---|
| `selected` | {counts.get("selected", 0)} | evaluation set: 50 per discipline, all sub-disciplines, tiers balanced |
| `backup` | {counts.get("backup", 0)} | the rest of the candidate pool, for re-sampling and larger evaluations |

## Construction

1. **Collect**: physics from NASA ADS (per sub-discipline queries), the other five disciplines from OpenAlex
   (article records whose primary topic is in the sub-discipline's subfield and whose text matches its keywords,
   most cited first, back-filled from the subfield alone); arXiv metadata for preprints.
2. **Fuse** the sources: title, year and citations from ADS; abstract ADS > OpenAlex > arXiv.
3. **Classify**: physics by a four-stage cascade (arXiv class, journal, two or more controlled keywords, title);
   the other disciplines by construction, each paper in one sub-discipline only.
4. **Index**: the seven dimensions over the whole candidate pool and the weighted composite.
5. **Quality check and sample**: about 125 papers per sub-discipline stratified across score quartiles; 50
   `selected` papers per discipline.
{summary}
## Fields

`bibcode` (ADS bibcode for physics; an internal work id for the other disciplines), `doi`, `openalex_id`,
`arxiv_id`, `title`, `abstract`, `year`, `discipline`, `subcategory_id`, `subcategory_name`, `journal_name`,
`journal_tier` (Q1-Q4 or null), `innovation_score` (0-100) and `dimension_scores` (seven floats, 0-100).

## Weights of the composite

| | dimension | weight |
|---|---|---|
{weight_rows}

The paper publishes the contributions of citation impact (37.99) and journal impact (19.73 of 128.86) and only
the total of the five middle dimensions, which the default splits equally. `innovation_score` is the weighted
sum of the seven dimensions, rounded to 2 decimals.

## Sources and licences

NASA ADS metadata (ADS terms of use), OpenAlex (CC0), arXiv metadata (CC0 for the metadata). Abstracts remain
the work of their authors and publishers. Journal indicators: an open proxy from OpenAlex source statistics
unless a licensed JCR/CAS table was supplied.

## Limitations

Bibliometric signals drift as citations accumulate, so the pool should be re-indexed and re-sampled
periodically; 50 papers per discipline give wide intervals; the corpus is English-dominant.

## Citation

```bibtex
{CITATION}```
"""


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse an output folder that exists, unless ``overwrite`` and it is empty or a dataset folder (a card and
    Parquet splits, what :func:`write_dataset` writes): ``--overwrite`` must never delete anything else.

    Parameters
    ----------
    out : Path
        The dataset folder to be written.
    overwrite : bool
        Whether an existing dataset folder may be replaced.

    Raises
    ------
    ScitasteError
        When ``out`` exists and may not be replaced.
    """
    if not out.exists():
        return
    if not overwrite:
        raise ScitasteError(f"{out} already exists; choose another --out or pass --overwrite")
    if not out.is_dir():
        raise ScitasteError(f"{out} is a file; --overwrite replaces only a dataset folder, so nothing was deleted")
    if any(out.iterdir()) and not ((out / "README.md").is_file() and any((out / "data").glob("*.parquet"))):
        raise ScitasteError(f"{out} is not a dataset folder (no README.md with data/*.parquet); --overwrite replaces "
                            "only a dataset that scitaste build wrote, so nothing was deleted")


def _partial_prefix(out: Path) -> str:
    return f".{out.name}.partial-"


def stale_partials(out: Path) -> list[Path]:
    """The unfinished dataset folders that :func:`write_dataset` left beside ``out`` when its process was killed
    (``.OUT.partial-XXXXXXXX``, the name :func:`tempfile.mkdtemp` completes): folders only, never a link.

    Parameters
    ----------
    out : Path
        The dataset folder.
    """
    # mkdtemp completes the prefix with 8 characters: the pattern matches its names and nothing looser.
    found = out.parent.glob(glob.escape(_partial_prefix(out)) + "?" * 8) if out.parent.is_dir() else []
    return sorted(p for p in found if p.is_dir() and not p.is_symlink())


def write_dataset(out_dir: str | Path, splits: Mapping[str, Sequence[Mapping[str, Any]]],
                  weights: Mapping[str, float], *, synthetic: bool, summary: str = "",
                  overwrite: bool = False, extra_files: Mapping[str, str] | None = None) -> Path:
    """Write both splits and the card to ``out_dir``, atomically (a temporary folder renamed at the end).

    Parameters
    ----------
    out_dir : path
        The dataset folder; an existing one is refused unless ``overwrite``.
    splits : mapping of split name to records
        ``selected`` and ``backup``, records of the benchmark schema.
    weights : mapping
        The weight vector the composites were computed with (shown in the card).
    synthetic : bool
        Whether the records come from the simulated world (said in the card and the licence).
    summary : str
        Extra Markdown for the card's construction section (the build's counts).
    overwrite : bool
        Replace an existing folder.
    extra_files : mapping of relative path to text, optional
        Further files of the folder (``openalex_bibcode_map.json``); ``load_dataset`` reads only the splits.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    check_out(out, overwrite)
    features = record_features()
    schema = features.arrow_schema
    tmp = temporary_dir(out.parent, _partial_prefix(out))
    try:
        (tmp / "data").mkdir()
        sizes = {}
        for split in SPLITS:
            rows = sorted(splits.get(split, ()), key=lambda r: r["bibcode"])
            table = pa.Table.from_pylist([{k: r.get(k) for k in features} for r in rows], schema=schema)
            # Written under another name and renamed once whole, so that a write cut short by a kill never leaves
            # a file that looks like a split.
            part = tmp / "data" / f"{split}-00000-of-00001.parquet.part"
            pq.write_table(table, part)
            part.rename(part.with_suffix(""))
            sizes[split] = table.nbytes
        counts = {s: len(splits.get(s, ())) for s in SPLITS}
        (tmp / "README.md").write_text(card(counts, weights, synthetic=synthetic, summary=summary,
                                            num_bytes=sizes), "utf-8")
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text, "utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
