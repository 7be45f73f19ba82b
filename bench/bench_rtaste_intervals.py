"""Coverage of rTaste's 95% intervals across seed papers: how often the interval of an item-weighted mean
(the agent-minus-judge difference of squared errors) covers its population value in simulated studies with
4, 7 and 20 seed papers, for the percentile bootstrap the package used before and for the candidates that
replace it; then the agent-minus-judge interval of the bundled example release, before and after.

    python bench/bench_rtaste_intervals.py [--studies 2000] [--seed 0]

A simulated study draws its seed papers independently. Each paper has 2-6 conditions of five MVEs, and each MVE
is scored (resolved, with a same-model judge forecast) with probability 0.85, so papers have unequal numbers of
items (17 on average, about 5-30). Each MVE has a hidden chance of its event, Beta(2, 2); the event occurs with
that chance; the same-model judge forecasts the chance with noise sd 0.2; the agent with a bias and a noise sd
that are the paper's own (bias N(0, 0.12), sd U(0.1, 0.3)): the between-paper heterogeneity. A forecast is
clipped to 0.02-0.98. The value of an item is the agent's squared error minus the judge's. In the second design
("sizes matter") papers with more conditions also have a larger agent bias, so the item-weighted population
value differs from the mean over papers. The population value, E[sum of a paper's values] / E[its number of
items], comes from 400,000 simulated papers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from scitaste_hf.rtaste.events import resolve
from scitaste_hf.rtaste.metrics import grouped_mean
from scitaste_hf.rtaste.release import load_release
from scitaste_hf.rtaste.report import brier_table
from scitaste_hf.scoring.bootstrap import CONFIDENCE, N_RESAMPLES, SEED, resample_counts

PAPERS = (4, 7, 20)
SCORED = 0.85  # share of MVEs scored


def simulate_papers(rng: np.random.Generator, n_papers: int, sizes_matter: bool
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per-item values and their paper index (0..n_papers-1) for ``n_papers`` independent seed papers."""
    conditions = rng.integers(2, 7, n_papers)
    sizes = rng.binomial(5 * conditions, SCORED)
    bias = rng.normal(0.0, 0.12, n_papers)
    if sizes_matter:
        bias = bias + 0.06 * (conditions - 2)
    noise = rng.uniform(0.1, 0.3, n_papers)
    index = np.repeat(np.arange(n_papers), sizes)
    chance = rng.beta(2.0, 2.0, index.size)
    occurred = (rng.random(index.size) < chance).astype(np.float64)
    agent = np.clip(chance + bias[index] + noise[index] * rng.standard_normal(index.size), 0.02, 0.98)
    judge = np.clip(chance + 0.2 * rng.standard_normal(index.size), 0.02, 0.98)
    return (agent - occurred) ** 2 - (judge - occurred) ** 2, index


def population_value(sizes_matter: bool, seed: int, n_papers: int = 400_000) -> float:
    """E[sum of a paper's values] / E[its number of items], from ``n_papers`` simulated papers."""
    values, _ = simulate_papers(np.random.default_rng([seed, 99]), n_papers, sizes_matter)
    return float(values.mean())


def _sums(values: np.ndarray, index: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.bincount(index, weights=values, minlength=n_groups),
            np.bincount(index, minlength=n_groups).astype(np.float64))


def percentile_bootstrap(values, index, n_groups, counts, confidence=CONFIDENCE):
    """The package's interval before this change: the percentile bootstrap of the item-weighted mean over
    resamples of whole groups (``counts`` = ``resample_counts(n_groups, 1000, seed=0)``, as it used)."""
    sums, sizes = _sums(values, index, n_groups)
    means = counts @ sums / (counts @ sizes)
    alpha = 100 * (1 - confidence) / 2
    return np.percentile(means, [alpha, 100 - alpha])


def bca_bootstrap(values, index, n_groups, counts, confidence=CONFIDENCE):
    """BCa over the same group resamples: bias correction from the resamples, acceleration from the
    leave-one-group-out jackknife."""
    sums, sizes = _sums(values, index, n_groups)
    estimate = sums.sum() / sizes.sum()
    means = counts @ sums / (counts @ sizes)
    below = np.mean(means < estimate) + 0.5 * np.mean(means == estimate)
    z0 = stats.norm.ppf(np.clip(below, 1e-6, 1 - 1e-6))
    jack = (sums.sum() - sums) / (sizes.sum() - sizes)
    d = jack.mean() - jack
    denom = 6.0 * (d ** 2).sum() ** 1.5
    a = (d ** 3).sum() / denom if denom > 0 else 0.0
    z = stats.norm.ppf([(1 - confidence) / 2, (1 + confidence) / 2])
    levels = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return np.percentile(means, 100 * levels)


def t_over_group_means(values, index, n_groups, confidence=CONFIDENCE):
    """Student t over the per-group means (G-1 df), centred on their unweighted mean."""
    sums, sizes = _sums(values, index, n_groups)
    means = sums / sizes
    half = stats.t.ppf((1 + confidence) / 2, n_groups - 1) * means.std(ddof=1) / np.sqrt(n_groups)
    return np.array([means.mean() - half, means.mean() + half])


def cluster_robust(values, index, n_groups, kind, confidence=CONFIDENCE):
    """The item-weighted mean (the ratio estimator) with a cluster-robust variance, CR1 (G/(G-1) correction)
    or CR2 (Bell-McCaffrey), and G-1 df."""
    sums, sizes = _sums(values, index, n_groups)
    total = sizes.sum()
    estimate = sums.sum() / total
    residual = sums - estimate * sizes
    if kind == "CR1":
        variance = n_groups / (n_groups - 1) * (residual ** 2).sum() / total ** 2
    else:
        variance = (residual ** 2 / (1 - sizes / total)).sum() / total ** 2
    half = stats.t.ppf((1 + confidence) / 2, n_groups - 1) * np.sqrt(variance)
    return np.array([estimate - half, estimate + half])


def package_interval(values, index, n_groups):
    """:func:`grouped_mean` as the package computes it now."""
    return np.array(grouped_mean(values, index.astype(str))["interval"])


def coverage(n_papers: int, n_studies: int, seed: int, sizes_matter: bool, truth: float) -> dict[str, float]:
    """Share of ``n_studies`` simulated studies whose interval covers ``truth``, per method."""
    rng = np.random.default_rng([seed, n_papers, int(sizes_matter)])
    counts = resample_counts(n_papers, N_RESAMPLES, SEED)
    methods = {
        "percentile bootstrap (before)": lambda v, i: percentile_bootstrap(v, i, n_papers, counts),
        "BCa bootstrap": lambda v, i: bca_bootstrap(v, i, n_papers, counts),
        "t over per-paper means": lambda v, i: t_over_group_means(v, i, n_papers),
        "cluster-robust CR1, G-1 df": lambda v, i: cluster_robust(v, i, n_papers, "CR1"),
        "cluster-robust CR2, G-1 df": lambda v, i: cluster_robust(v, i, n_papers, "CR2"),
        "grouped_mean (now)": lambda v, i: package_interval(v, i, n_papers),
    }
    hits = dict.fromkeys(methods, 0)
    widths = dict.fromkeys(methods, 0.0)
    for _ in range(n_studies):
        values, index = simulate_papers(rng, n_papers, sizes_matter)
        for name, method in methods.items():
            lo, hi = method(values, index)
            hits[name] += bool(lo <= truth <= hi)
            widths[name] += hi - lo
    return {name: (hits[name] / n_studies, widths[name] / n_studies) for name in methods}


def bundled_release() -> None:
    """The agent-minus-judge interval of the bundled example release, before and after."""
    release = load_release()
    # As report.brier_table computes it: resolved MVEs that have a forecast by the judge of the agent's model.
    scored = [(r, o) for r in release.records if (o := resolve(r)) is not None
              and any(j.judge_model == r.model for j in r.judge_predictions)]
    outcome = np.array([o for _, o in scored], dtype=np.float64)
    agent = np.array([r.probability for r, _ in scored])
    judge = np.array([next(j.probability for j in r.judge_predictions if j.judge_model == r.model)
                      for r, _ in scored])
    values = (agent - outcome) ** 2 - (judge - outcome) ** 2
    labels, index = np.unique([r.seed_paper for r, _ in scored], return_inverse=True)
    after = brier_table(release)["agent_minus_judge"]
    # The same items and interval as the report's:
    assert after == grouped_mean(values, [r.seed_paper for r, _ in scored])
    before = percentile_bootstrap(values, index, labels.size, resample_counts(labels.size, N_RESAMPLES, SEED))
    sums, sizes = _sums(values, index, labels.size)
    print(f"\nbundled example release: agent minus same-model judge, {values.size} MVEs on {labels.size} seed "
          f"papers (per-paper means {', '.join(f'{m:+.4f}' for m in sums / sizes)})")
    print(f"  estimate {after['estimate']:+.4f}")
    for name, (lo, hi) in (("before (percentile bootstrap, 1,000 resamples, seed 0)", before),
                           ("now (cluster-robust CR2 t, G-1 df: grouped_mean)", after["interval"])):
        print(f"  {name + ':':57}[{lo:+.4f}, {hi:+.4f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000, help="simulated studies per design (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    args = parser.parse_args()
    start = time.perf_counter()
    for sizes_matter in (False, True):
        truth = population_value(sizes_matter, args.seed)
        design = "sizes matter" if sizes_matter else "study-like"
        print(f"\n{design} design: population value {truth:+.5f}; coverage of the 95% interval "
              f"(mean width) in {args.studies:,} simulated studies")
        results = {g: coverage(g, args.studies, args.seed, sizes_matter, truth) for g in PAPERS}
        print(f"  {'method':32}" + "".join(f"{f'{g} seed papers':>22}" for g in PAPERS))
        for name in results[PAPERS[0]]:
            print(f"  {name:32}" + "".join(f"{results[g][name][0]:>13.1%} ({results[g][name][1]:.3f})"
                                            for g in PAPERS))
    bundled_release()
    print(f"\n{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
