"""The simulated world against the paper: for each world seed, a default build against a fresh mirror, then the
calibration report (scitaste_hf.simworld.calibration: the paper's dual-target derivation over every paper the
build scored, each figure beside its target and tolerance), the split sizes and `scitaste weights fit` on the
published records (the packaged weights recovered, residual RMSE < 0.01); with --generation also the time and
peak memory of generating the world alone.

The derivation runs on the build's whole scored pool (its index stage, about 1.27 papers per paper kept), not on
the splits sampled from it: the index was computed over that pool, and the paper derived its weights on all of
its 998 papers. At --papers 600 that is some 760 papers, whose 20% test split still moves the RF R2 of G by 0.06
(one standard deviation over world seeds 0-24) against a tolerance of 0.08 (figures in bench/README.md).

    .venv/bin/python bench/bench_calibration.py [--papers 6000] [--seeds 0 1 2 3 4] [--generation]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


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


def calibrate(papers: int, seed: int, folder: Path) -> int:
    """Build the world of ``seed`` in ``folder`` and print its report; the number of rows that fail."""
    from scitaste_hf.index.weights import _read_table, fit_weights, load_records
    from scitaste_hf.simworld.calibration import report
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    started = time.perf_counter()
    failed = 0
    out = folder / "ds"
    build(papers, seed, out, folder / "work")
    dims, disciplines = scored(folder / "work")
    table = _read_table(out / "data")
    splits = {s: pq_rows(out, s) for s in ("selected", "backup")}
    print(f"\nseed {seed}, {papers} papers: selected {len(splits['selected'])}, backup "
          f"{len(splits['backup'])}; per discipline "
          f"{dict(Counter(r for r in splits['selected']))} / {dict(Counter(r for r in splits['backup']))}; "
          f"without sub-discipline {sum(v is None for v in table.column('subcategory_id').to_pylist())} "
          f"({time.perf_counter() - started:.0f} s)")
    print(f"derived on the {len(dims)} papers the build scored")
    print(f"{'row':<62}{'paper':>8}{'world':>9}{'tolerance':>11}  pass")
    for row in report(dims, disciplines):
        bound = f"< {row['tolerance']:g}" if row["kind"] == "below" else f"± {row['tolerance']:g}"
        print(f"{row['label']:<62}{row['paper']:>8.3f}{row['world']:>9.3f}{bound:>11}  "
              f"{'yes' if row['passed'] else 'NO'}")
        failed += not row["passed"]
    published, score = load_records(out, need_score=True)
    fit = fit_weights(published, score)
    off = max(abs(fit["weights"][k] - w) for k, w in DEFAULT_WEIGHTS.items())
    print(f"weights fit on the {len(published)} published records: residual RMSE {fit['residual_rmse']:.4f} "
          f"(target < 0.01), largest difference from the packaged weights {off:.4f}")
    failed += not fit["residual_rmse"] < 0.01
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=6000, help="benchmark papers of the world (default 6000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="world seeds, one build each (default 0 1 2 3 4)")
    parser.add_argument("--generation", action="store_true",
                        help="also time the world's generation and report its peak memory")
    args = parser.parse_args()
    failed = 0
    for seed in args.seeds:
        if args.generation:
            generation(args.papers, seed)
        with tempfile.TemporaryDirectory(prefix="bench-calibration-") as tmp:
            failed += calibrate(args.papers, seed, Path(tmp))
    print(f"\n{failed} row(s) outside their tolerance")


def pq_rows(out: Path, split: str) -> list[str]:
    """The discipline of every record of a split."""
    import pyarrow.parquet as pq

    return [d for f in sorted((out / "data").glob(f"{split}-*.parquet"))
            for d in pq.read_table(f, columns=["discipline"]).column("discipline").to_pylist()]


if __name__ == "__main__":
    main()
