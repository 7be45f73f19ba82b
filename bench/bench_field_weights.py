"""Field-specific weights on the simulated world (issue 20): a world whose disciplines were generated with different
latent loadings (`scitaste mirror serve --field-weights distinct`), a default build against it, then `scitaste
weights derive --by discipline` on the published records. For each discipline it prints the recovered vector
beside the true one (the preset's `true_weights`) with the world issue's tolerance (the calibration targets' +-3
points for A and G, +-4 for each of B-F), and what the shared vector loses there (the transfer table's row for it).

--measure-true SEED [SEED ...] measures the true vectors instead: builds of the worlds of those seeds (other than
the one checked) with the same field weights and size, and the paper's derivation within each discipline over every
paper they scored together; it prints the `true_weights` and `measured` entries to store in the preset.

    .venv/bin/python bench/bench_field_weights.py [--papers 6000] [--seed 0] [--field-weights distinct]
    .venv/bin/python bench/bench_field_weights.py --measure-true 101 102 103
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from bench_calibration import SCITASTE, build, scored


def tolerances() -> dict[str, float]:
    """The world issue's tolerance of each derived weight, in points: the calibration targets' own."""
    from scitaste_hf.simworld.calibration import TARGETS

    return {t.key.split(".", 1)[1]: t.tolerance for t in TARGETS if t.key.startswith("weight.")}


def true_vectors(dims, disciplines) -> dict[str, dict[str, float]]:
    """The paper's derivation (ensemble) within each discipline, in percent to one decimal: what the preset stores
    as ``true_weights`` when the records are a large world's whole scored pool."""
    from scitaste_hf.index.weights import derive_weights
    from scitaste_hf.schema import DIMENSIONS

    true = {}
    for d in dict.fromkeys(disciplines.tolist()):
        mask = disciplines == d
        true[d] = {k: round(100 * w, 1) for k, w in derive_weights(dims[mask], "ensemble")["weights"].items()}
        print(f"{d:<12} {int(mask.sum()):>6} papers  " + "  ".join(f"{true[d][k]:5.1f}" for k in DIMENSIONS))
    return true


def measure_true(papers: int, seeds: list[int], preset: str) -> None:
    """Derive each discipline's vector over every paper that default builds of the preset's world, one per seed,
    scored together."""
    import numpy as np

    started = time.perf_counter()
    pools = []
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="bench-field-weights-") as tmp:
            build(papers, seed, Path(tmp) / "ds", Path(tmp) / "work", ("--field-weights", preset))
            pools.append(scored(Path(tmp) / "work"))
    dims, disciplines = np.vstack([p[0] for p in pools]), np.concatenate([p[1] for p in pools])
    true = true_vectors(dims, disciplines)
    counts = np.unique(disciplines, return_counts=True)[1]
    measured = (f"bench/bench_field_weights.py --papers {papers} --measure-true {' '.join(map(str, seeds))}: the "
                f"paper's derivation (ensemble) within each discipline over all {len(dims)} papers that default builds "
                f"of the {papers}-paper worlds of these seeds scored ({counts.min()}-{counts.max()} per discipline); "
                f"{time.perf_counter() - started:.0f} s")
    print(json.dumps({"true_weights": true, "measured": measured}, indent=2))


def recover(papers: int, seed: int, preset: str) -> int:
    """Build the preset's world, derive per discipline, print recovered vs true; the number of weights outside
    their tolerance."""
    from scitaste_hf.index.weights import SHARED
    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.simworld.latent import load_field_weights

    true = load_field_weights(preset).true_weights
    tolerance = tolerances()
    with tempfile.TemporaryDirectory(prefix="bench-field-weights-") as tmp:
        started = time.perf_counter()
        out = Path(tmp) / "ds"
        build(papers, seed, out, Path(tmp) / "work", ("--field-weights", preset))
        report = Path(tmp) / "by-discipline.json"
        subprocess.run([SCITASTE, "weights", "derive", "--records", str(out), "--by", "discipline", "--json",
                        str(report)], check=True, capture_output=True)
        result = json.loads(report.read_text())
    print(f"world seed {seed}, {papers} papers, field weights {preset}: `weights derive --by discipline` on the "
          f"{result['n_records']} published records ({time.perf_counter() - started:.0f} s)")
    print(f"\n{'discipline':<12}{'':>10}" + "".join(f"{k[:11]:>12}" for k in DIMENSIONS) + "  pass")
    failed = 0
    for d, derived in result["disciplines"].items():
        got = {k: 100 * w for k, w in derived["weights"].items()}
        off = [k for k in DIMENSIONS if abs(got[k] - true[d][k]) > tolerance[k]]
        failed += len(off)
        print(f"{d:<12}{'true':>10}" + "".join(f"{true[d][k]:>12.1f}" for k in DIMENSIONS))
        print(f"{'':<12}{'recovered':>10}" + "".join(f"{got[k]:>12.1f}" for k in DIMENSIONS)
              + f"  {'yes' if not off else 'NO: ' + ', '.join(off)}")
    print(f"{'':<12}{'tolerance':>10}" + "".join(f"{'±' + format(tolerance[k], 'g'):>12}" for k in DIMENSIONS))
    shared = {k: 100 * w for k, w in result["shared"]["weights"].items()}
    print(f"{SHARED:<12}{'derived':>10}" + "".join(f"{shared[k]:>12.1f}" for k in DIMENSIONS))
    print("\nthe shared vector in each discipline (transfer table; 95% bootstrap intervals):")
    print(f"{'discipline':<12}{'Spearman':>24}{'top-decile overlap':>24}{'WAPE':>24}")
    for d, cell in result["transfer"][SHARED].items():
        print(f"{d:<12}" + "".join(f"{_cell(cell[s], spec):>24}" for s, spec in (
            ("spearman", ".3f"), ("top_decile_overlap", ".2f"), ("wape", ".1%"))))
    verdict = result["verdict"]
    print(f"\nverdict: the shared vector is {'' if verdict['shared_defensible'] else 'not '}defensible "
          f"(failing in {', '.join(verdict['failing']) or 'no discipline'})")
    print(f"{failed} weight(s) outside their tolerance")
    return failed


def _cell(stat: dict, spec: str) -> str:
    low, high = stat.get("interval") or (float("nan"), float("nan"))
    return f"{stat['value']:{spec}} [{low:{spec}}, {high:{spec}}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=6000, help="benchmark papers of the world (default 6000)")
    parser.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    parser.add_argument("--field-weights", default="distinct", help="preset or file (default distinct)")
    parser.add_argument("--measure-true", type=int, nargs="+", metavar="SEED",
                        help="measure the preset's true vectors instead, over the worlds of these seeds")
    args = parser.parse_args()
    if args.measure_true:
        measure_true(args.papers, args.measure_true, args.field_weights)
    else:
        recover(args.papers, args.seed, args.field_weights)


if __name__ == "__main__":
    main()
