"""The simulated world against the paper: for each world seed, a default build against a fresh mirror, then the
calibration report (scitaste_hf.simworld.calibration: the paper's dual-target derivation, each figure beside its
target and tolerance), the split sizes and `scitaste weights fit` on the published records (the packaged weights
recovered, residual RMSE < 0.01); with --generation also the time and peak memory of generating the world alone;
with --identical a second build of the first seed, compared file by file (sha256).

The report derives on the released records, `selected` and `backup` as `scitaste weights derive --records` reads
them (the paper derived its weights on the records it published), and beside them on the build's whole scored
pool (its index stage, about 1.23 papers per paper kept), from which the balancing sampler drew them: the column
that shows what the sampling step changes. Pass or fail is the released column's. Each seed's table is followed by
the same derivation written again from the paper's description (`independent`: scikit-learn's forests on the
released records' Parquet files, none of the package's derivation code), checked against the same tolerances.

At the default size each seed gets its table. Below it (--papers 600: some 600 released records, a test split of
120) one seed says little, so the report is each row's mean, standard deviation and range over the seeds (default
0-24 there) and how many seeds pass it: the sampling noise at that size, measured.

    .venv/bin/python bench/bench_calibration.py [--papers 6000] [--seeds 0 1 2 3 4] [--jobs 1] [--generation]
        [--identical]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
#: The size the world is calibrated at, and a build's default.
DEFAULT_PAPERS = 6000


def generation(papers: int, seed: int) -> None:
    code = ("import resource, time; from scitaste_hf.simworld.world import generate; t = time.perf_counter(); "
            f"w = generate({papers}, {seed}); print(f'{{time.perf_counter() - t:.1f}} s, {{w.n_works}} works, "
            "{w.ref_idx.size} edges, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    print(f"generation, {papers} papers, seed {seed}: {out}   target: 3x faster than 22-28 s, < 250 MiB")


def build(papers: int, seed: int, out: Path, work: Path, world: tuple[str, ...] = ()) -> None:
    """A default build of ``papers`` in ``out`` (work directory ``work``) against a fresh mirror of the world of
    ``seed``; ``world``: more ``mirror serve`` options."""
    mirror = subprocess.Popen([SCITASTE, "mirror", "serve", "--papers", str(papers), "--seed", str(seed), "--port",
                               "0", *world], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ""
        while not line.startswith("READY"):
            line = mirror.stdout.readline()
            if not line:
                sys.exit("the mirror did not start")
        per_discipline = papers // 6
        done = subprocess.run([SCITASTE, "build", "--mirror-url", line.split()[1], "--out", str(out), "--work-dir",
                               str(work), "--seed", str(seed), "--per-discipline", str(per_discipline),
                               "--selected-per-discipline", str(min(50, max(8, per_discipline // 20)))],
                              capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"build failed: {done.stderr[-2000:]}")
    finally:
        mirror.terminate()
        mirror.wait(timeout=30)


def scored(work: Path):
    """Dimension scores and disciplines of every paper the build scored: its index stage's checkpoint
    (``stages/index-<fingerprint>.json``, see scitaste_hf.builder.pipeline)."""
    import numpy as np
    import orjson

    from scitaste_hf.schema import DIMENSIONS

    (path,) = (work / "stages").glob("index-*.json")
    records = orjson.loads(path.read_bytes())["records"]
    dims = np.array([[r["dimension_scores"][d] for d in DIMENSIONS] for r in records])
    return dims, np.array([r["discipline"] for r in records])


def independent(out: Path) -> dict[str, float]:
    """The paper's dual-target derivation written again from its description, without the package's derivation
    or loaders: the released records' dimension scores read from the Parquet files, standardised, split 80/20
    (seed 42), a random forest of 100 trees (seed 42) predicting A from B-G and another predicting G from A-F;
    B-F's weight the mean of their two impurity importances, A's from the second, G's from the first, renormalised.
    Keys as :func:`scitaste_hf.simworld.calibration.measure`'s R2 and weight rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from scitaste_hf.schema import DIMENSIONS

    files = [f for split in ("selected", "backup") for f in sorted((out / "data").glob(f"{split}-*.parquet"))]
    scores = pa.concat_tables(pq.read_table(f, columns=["dimension_scores"]) for f in files).column(
        "dimension_scores").combine_chunks()
    dims = np.column_stack([scores.field(d).to_numpy(zero_copy_only=False) for d in DIMENSIONS]).astype(float)
    z = StandardScaler().fit_transform(dims)
    found, importances = {}, []
    for target, features in ((0, slice(1, 7)), (6, slice(0, 6))):
        x_train, x_test, y_train, y_test = train_test_split(z[:, features], dims[:, target], test_size=0.2,
                                                            random_state=42)
        forest = RandomForestRegressor(n_estimators=100, random_state=42, n_jobs=-1).fit(x_train, y_train)
        found[f"r2.{DIMENSIONS[target]}"] = float(forest.score(x_test, y_test))
        importances.append(forest.feature_importances_ / forest.feature_importances_.sum())
    first, second = importances
    raw = np.array([second[0], *((first[:5] + second[1:]) / 2), first[5]])
    found.update({f"weight.{d}": float(100 * w) for d, w in zip(DIMENSIONS, raw / raw.sum())})
    return found


def digests(out: Path) -> dict[str, str]:
    """sha256 of every file of a built dataset, by its path inside it."""
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def calibrate(papers: int, seed: int, folder: Path) -> dict:
    """Build the world of ``seed`` in ``folder``: the report's rows on the released records (``released``) and
    on the scored pool (``pool``), the split sizes and the weights fit."""
    from scitaste_hf.index.weights import _read_table, fit_weights, load_records, load_records_by_discipline
    from scitaste_hf.simworld.calibration import report
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    started = time.perf_counter()
    out = folder / "ds"
    build(papers, seed, out, folder / "work")
    released, _, disciplines = load_records_by_discipline(out, need_score=False)
    pool, pool_disciplines = scored(folder / "work")
    splits = {s: pq_rows(out, s) for s in ("selected", "backup")}
    table = _read_table(out / "data")
    published, score = load_records(out, need_score=True)
    fit = fit_weights(published, score)
    return {"seed": seed, "released": report(released, disciplines), "pool": report(pool, pool_disciplines),
            "independent": independent(out),
            "n_released": len(released), "n_pool": len(pool),
            "splits": {s: dict(Counter(v)) for s, v in splits.items()},
            "fit_rmse": fit["residual_rmse"], "seconds": time.perf_counter() - started,
            "no_subdiscipline": sum(v is None for v in table.column("subcategory_id").to_pylist()),
            "fit_off": max(abs(fit["weights"][k] - w) for k, w in DEFAULT_WEIGHTS.items())}


def _bound(row: dict) -> str:
    return f"< {row['tolerance']:g}" if row["kind"] == "below" else f"± {row['tolerance']:g}"


def print_seed(papers: int, result: dict) -> int:
    """One seed's table; the number of rows outside their tolerance (the weights fit's included)."""
    sel, back = result["splits"]["selected"], result["splits"]["backup"]
    print(f"\nseed {result['seed']}, {papers} papers: selected {sum(sel.values())}, backup {sum(back.values())}; "
          f"per discipline {dict(sel)} / {dict(back)}; without sub-discipline {result['no_subdiscipline']} "
          f"({result['seconds']:.0f} s)")
    print(f"derived on the {result['n_released']} released records (pass or fail) and on the {result['n_pool']} "
          "papers the build scored")
    print(f"{'row':<62}{'paper':>8}{'released':>10}{'pool':>9}{'tolerance':>11}  pass")
    failed = 0
    for row, whole in zip(result["released"], result["pool"]):
        print(f"{row['label']:<62}{row['paper']:>8.3f}{row['world']:>10.3f}{whole['world']:>9.3f}{_bound(row):>11}"
              f"  {'yes' if row['passed'] else 'NO'}")
        failed += not row["passed"]
    print(f"weights fit on the {result['n_released']} published records: residual RMSE {result['fit_rmse']:.4f} "
          f"(target < 0.01), largest difference from the packaged weights {result['fit_off']:.4f}")
    return failed + (not result["fit_rmse"] < 0.01) + print_independent(result)


def print_independent(result: dict) -> int:
    """The independent derivation's rows (:func:`independent`) against the same tolerances, and how far it is from
    the report's; the number of its rows outside their tolerance."""
    rows = {row["key"]: row for row in result["released"]}
    outside, gap = [], 0.0
    for key, value in result["independent"].items():
        row = rows[key]
        gap = max(gap, abs(value - row["world"]))
        if abs(value - row["paper"]) > row["tolerance"]:
            outside.append(f"{row['label']} {value:.3f}")
    print(f"independent derivation (the paper's random forests written again, on the released records' Parquet "
          f"files): largest difference from the report's rows {gap:.2g}; outside the tolerance: "
          f"{'; '.join(outside) or 'none'}")
    return len(outside)


def print_spread(papers: int, results: list[dict]) -> None:
    """Each row's mean, standard deviation and range over the seeds, released and pool, and how many seeds pass."""
    import numpy as np

    seeds = [r["seed"] for r in results]
    print(f"\n{papers} papers, world seeds {min(seeds)}-{max(seeds)} ({len(seeds)} builds; released "
          f"{min(r['n_released'] for r in results)}-{max(r['n_released'] for r in results)} records, pool "
          f"{min(r['n_pool'] for r in results)}-{max(r['n_pool'] for r in results)}): mean ± standard deviation "
          "[min, max]")
    print(f"{'row':<62}{'paper':>8}{'tolerance':>11}  {'released':<32}{'pool':<16}seeds passing")
    for k, first in enumerate(results[0]["released"]):
        values = np.array([r["released"][k]["world"] for r in results])
        whole = np.array([r["pool"][k]["world"] for r in results])
        passing = sum(r["released"][k]["passed"] for r in results)
        spread = f"{values.mean():.3f} ± {values.std(ddof=1):.3f} [{values.min():.3f}, {values.max():.3f}]"
        print(f"{first['label']:<62}{first['paper']:>8.3f}{_bound(first):>11}  {spread:<32}"
              f"{f'{whole.mean():.3f} ± {whole.std(ddof=1):.3f}':<16}{passing}/{len(results)}")
    rmse = [r["fit_rmse"] for r in results]
    print(f"weights fit residual RMSE {min(rmse):.4f}-{max(rmse):.4f} (target < 0.01); every row passing on "
          f"{sum(all(row['passed'] for row in r['released']) for r in results)} of {len(results)} seeds")


def print_pool_gap(results: list[dict]) -> None:
    """How far the whole-pool column is from the released one: per row, the mean and the largest absolute
    difference over the seeds, and on how many seeds the pool would fail a row the released records pass."""
    import numpy as np

    print(f"\npool - released over {len(results)} seed(s): mean [largest absolute difference], seeds where only the "
          "pool fails")
    for k, first in enumerate(results[0]["released"]):
        gap = np.array([r["pool"][k]["world"] - r["released"][k]["world"] for r in results])
        only_pool = sum(r["released"][k]["passed"] and not r["pool"][k]["passed"] for r in results)
        print(f"{first['label']:<62}{gap.mean():>+9.3f} [{np.abs(gap).max():.3f}]{only_pool:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=DEFAULT_PAPERS,
                        help=f"benchmark papers of the world (default {DEFAULT_PAPERS})")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="world seeds, one build each (default 0-4 at the default size, 0-24 below it)")
    parser.add_argument("--jobs", type=int, default=1, help="builds at once (default 1)")
    parser.add_argument("--generation", action="store_true",
                        help="also time the world's generation and report its peak memory")
    parser.add_argument("--identical", action="store_true",
                        help="build the first seed twice and compare the datasets' files (sha256)")
    parser.add_argument("--json", type=Path, help="append each seed's result to this JSON-lines file as it comes")
    parser.add_argument("--from-json", type=Path,
                        help="print the report of the results in this JSON-lines file instead of building")
    args = parser.parse_args()
    if args.from_json:
        results = sorted((json.loads(line) for line in args.from_json.read_text().splitlines() if line.strip()),
                         key=lambda r: r["seed"])
        for result in results if args.papers >= DEFAULT_PAPERS else []:
            print_seed(args.papers, result)
        if args.papers < DEFAULT_PAPERS:
            print_spread(args.papers, results)
        else:
            print_pool_gap(results)
        return
    seeds = args.seeds or list(range(5 if args.papers >= DEFAULT_PAPERS else 25))

    def run(seed: int) -> dict:
        if args.generation:
            generation(args.papers, seed)
        with tempfile.TemporaryDirectory(prefix="bench-calibration-") as tmp:
            result = calibrate(args.papers, seed, Path(tmp))
            if args.identical and seed == seeds[0]:
                with tempfile.TemporaryDirectory(prefix="bench-calibration-") as again:
                    build(args.papers, seed, Path(again) / "ds", Path(again) / "work")
                    first, second = digests(Path(tmp) / "ds"), digests(Path(again) / "ds")
                result["identical"] = (first == second, len(first))
        return result

    failed, results = 0, []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for result in pool.map(run, seeds):
            results.append(result)
            if args.json:
                with args.json.open("a") as sink:
                    sink.write(json.dumps(result) + "\n")
            if "identical" in result:
                same, files = result["identical"]
                print(f"seed {result['seed']} built twice: {'byte-identical' if same else 'DIFFERENT'} ({files} "
                      "files, sha256)")
                failed += not same
            if args.papers >= DEFAULT_PAPERS:
                failed += print_seed(args.papers, result)
            else:
                print(f"seed {result['seed']}: {sum(not row['passed'] for row in result['released'])} row(s) outside "
                      f"their tolerance ({result['seconds']:.0f} s)", flush=True)
    if args.papers < DEFAULT_PAPERS:
        print_spread(args.papers, results)
    else:
        print_pool_gap(results)
        print(f"\n{failed} row(s) outside their tolerance")


def pq_rows(out: Path, split: str) -> list[str]:
    """The discipline of every record of a split."""
    import pyarrow.parquet as pq

    return [d for f in sorted((out / "data").glob(f"{split}-*.parquet"))
            for d in pq.read_table(f, columns=["discipline"]).column("discipline").to_pylist()]


if __name__ == "__main__":
    main()
