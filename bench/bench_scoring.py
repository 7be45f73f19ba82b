"""Time to score 300 and 5,700 papers (Scheme 1 + WAPE + 1,000-resample bootstrap) with scitaste_hf.scoring,
next to the same computation written directly with numpy/scipy in the same run; prints the ratio. Then a whole
`score_run` of 5,700 papers in six disciplines as `scitaste score` runs it: intervals, both floors and the
paired-bootstrap skill, overall and per discipline.

    python bench/bench_scoring.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy import stats

from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, Answer
from scitaste_hf.scoring import bootstrap, scheme1, score_run, wape, wape_score
from scitaste_hf.weights import DEFAULT_WEIGHTS

W = np.array([DEFAULT_WEIGHTS[k] for k in DIMENSIONS])


def _ratio(err, scale):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, 100 * np.maximum(0, 1 - err / scale), np.where(err == 0, 100.0, 0.0))


def _rowwise_corr(a, b):
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    return np.nan_to_num(r)


def direct(P, G, n_resamples=1000, seed=0):
    """Scheme 1, WAPE and the bootstrap written straight from docs/scoring.md with numpy/scipy: resample by
    fancy indexing, rank each resample with scipy.stats.rankdata."""
    rng = np.random.default_rng(seed)
    n = len(G)
    idx = np.vstack([np.arange(n), rng.integers(0, n, size=(n_resamples, n))])
    p, g = P[:, 0][idx], G[:, 0][idx]
    err = p - g
    rho = _rowwise_corr(stats.rankdata(p, axis=1), stats.rankdata(g, axis=1))
    r = _rowwise_corr(p, g)
    mae, mse, bias = np.abs(err).mean(1), (err**2).mean(1), err.mean(1)
    mae0 = np.abs(g - g.mean(1, keepdims=True)).mean(1)
    var = g.var(1)
    s_err = (_ratio(mae, mae0) + _ratio(mse, var)) / 2
    part_a = (15 * 100 * np.maximum(0, rho) + 10 * 100 * np.maximum(0, r) + 15 * s_err
              + 10 * _ratio(np.abs(bias), np.sqrt(var))) / 50
    wr = np.zeros(n_resamples + 1)
    wa = np.zeros(n_resamples + 1)
    for j in range(1, 8):
        pd, gd = P[:, j][idx], G[:, j][idx]
        wr += W[j - 1] * _rowwise_corr(stats.rankdata(pd, axis=1), stats.rankdata(gd, axis=1))
        wa += W[j - 1] * (1 - np.abs(pd - gd).mean(1) / np.abs(gd - gd.mean(1, keepdims=True)).mean(1))
    part_b = (30 * 100 * np.maximum(0, wr) + 20 * 100 * np.maximum(0, wa)) / 50
    s1 = 0.5 * part_a + 0.5 * part_b
    w = np.abs(err).sum(1) / g.sum(1)
    s2 = np.interp(w, [0, .05, .1, .2, .3, .5, 1], [100, 90, 75, 60, 40, 20, 0])
    return {"scheme1": s1[0], "wape": w[0],
            "ci": {k: np.percentile(v[1:], [2.5, 97.5]) for k, v in (("scheme1", s1), ("wape", w), ("scheme2", s2))}}


def package(P, G):
    """The same through the public API."""
    s1 = scheme1(P, G)["scheme1"]
    w = wape(P[:, 0], G[:, 0])
    return {"scheme1": s1, "wape": w, "scheme2": wape_score(w), "ci": bootstrap(P, G)}


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}; best of {args.repeat}")
    print(f"{'papers':>7} {'package s':>10} {'direct s':>9} {'ratio':>6}  check")
    for n in (300, 5700):
        rng = np.random.default_rng(n)
        G = rng.uniform(0, 100, (n, 8)).round(1)
        P = np.clip(G + rng.normal(3, 15, G.shape), 0, 100).round(1)
        t_pkg, pkg = best_of(lambda P=P, G=G: package(P, G), args.repeat)
        t_dir, ref = best_of(lambda P=P, G=G: direct(P, G), args.repeat)
        same = np.isclose(pkg["scheme1"], ref["scheme1"]) and np.isclose(pkg["wape"], ref["wape"])
        print(f"{n:>7} {t_pkg:>10.3f} {t_dir:>9.3f} {t_pkg / t_dir:>6.2f}  point estimates agree: {same}")
    gold = [{"bibcode": f"P{i}", "discipline": DISCIPLINES[i % len(DISCIPLINES)], "innovation_score": float(g[0]),
             "dimension_scores": dict(zip(DIMENSIONS, map(float, g[1:])))} for i, g in enumerate(G)]
    run = {r["bibcode"]: Answer.model_validate({"innovation_score": float(p[0]),
                                                "dimension_scores": dict(zip(DIMENSIONS, map(float, p[1:])))})
           for r, p in zip(gold, P)}
    for floors in (False, True):
        t_run, _ = best_of(lambda floors=floors: score_run(gold, run, floors=floors), args.repeat)
        state = "on" if floors else "off"
        print(f"score_run, {len(gold):,} papers, overall + 6 disciplines, floors and skill {state}: {t_run:.3f} s")


if __name__ == "__main__":
    main()
