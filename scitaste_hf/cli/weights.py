"""Derive the Academic Taste Index weights from records, or recover the weights a record set was built with; either
for all records at once or per discipline (docs/weights.md)."""

from __future__ import annotations

import argparse
import math

from scitaste_hf.cli import whole_number
from scitaste_hf.output import check_writable, finite_json, write_json_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``derive`` and ``fit`` subcommands to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser of ``scitaste weights``.
    """
    sub = parser.add_subparsers(dest="weights_command", metavar="ACTION", required=True)
    derive = sub.add_parser("derive", help="run the paper's regressions (docs/weights.md#weights-derive) and print "
                                           "the weights",
                            description="Predict citation impact from the other dimensions and journal impact "
                                        "from theirs; average the regressors' contributions into a weight vector. "
                                        "With --by discipline: a vector per discipline, the shared one, how well "
                                        "each reproduces the other disciplines' composites, and whether the "
                                        "shared vector is defensible.")
    derive.add_argument("--method", choices=("ensemble", "rf"), default="ensemble",
                        help="all five regressors (default) or the random forest alone")
    # The default is the scoring bootstrap's (N_RESAMPLES), resolved when the command runs so that building the
    # parser imports no scoring code.
    derive.add_argument("--n-resamples", type=whole_number(1), default=None,
                        help="with --by discipline: bootstrap resamples of the transfer table (default: the scoring "
                             "bootstrap's N_RESAMPLES)")
    derive.add_argument("--seed", type=whole_number(0), default=None,
                        help="with --by discipline: seed of the transfer table's bootstrap (default 0)")
    fit = sub.add_parser("fit", help="recover the weights of a record set by non-negative least squares",
                         description="Fit innovation_score on the seven dimensions (weights >= 0, sum 1) and "
                                     "report the residual, to check a dataset's composites for consistency.")
    for action in (derive, fit):
        action.add_argument("--records", required=True, metavar="PATH",
                            help="a Parquet file of records, a folder of them, or a saved dataset folder")
        action.add_argument("--by", choices=("discipline",),
                            help="one vector per discipline (the records' discipline field); the JSON's "
                                 "'weights' is then a per-discipline weights file for --weights")
        action.add_argument("--json", metavar="OUT", help="also write the result as JSON to OUT")


def _weight(result: dict, key: str) -> str:
    """A derived weight in percent with its interval (docs/weights.md#uncertainty)."""
    interval = (result["weights_interval"] or {}).get(key)
    span = "" if interval is None else f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"
    return f"{100 * result['weights'][key]:.1f}{span}"


def _r2(scores: dict) -> str:
    """A test R^2 with the spread of its five cross-validation folds."""
    test = "n/a" if not math.isfinite(scores["test"]) else f"{scores['test']:.3f}"
    cv = "n/a" if not math.isfinite(scores["cv_mean"]) else f"{scores['cv_mean']:.3f} ± {scores['cv_std']:.3f}"
    return f"{test} (CV {cv})"


#: Width of the first column of the tables (the dimension, statistic or vector).
_KEY = 26


def _header(columns: dict, width: int) -> str:
    """The header of a table with one column per vector: its name and its number of records."""
    names = [f"{name} ({r['n_records']})" for name, r in columns.items()]
    return " " * _KEY + "".join(f"{name:>{width}}" for name in names)


def _cell(cell: dict, spec: str, scale: float) -> str:
    """A transfer statistic with its interval (``[n/a]`` when the resamples left it undefined)."""
    interval = cell["interval"]
    span = " [n/a]" if interval is None else f" [{scale * interval[0]:{spec}}, {scale * interval[1]:{spec}}]"
    return f"{scale * cell['value']:{spec}}{span}"


def _print_derive(result: dict) -> None:
    from scitaste_hf.index.weights import CONFIDENCE

    print(f"weights derived from {result['n_records']} records (method {result['method']}); weight % with its "
          f"{CONFIDENCE:.0%} interval (jackknife over the 5 cross-validation folds)")
    print(f"{'dimension':<24}{'raw %':>9}  weight %")
    for key in result["weights"]:
        print(f"{key:<24}{result['raw'][key]:>9.2f}  {_weight(result, key)}")
    for target, models in result["r2"].items():
        print(f"predicting {target}, R2 test (5-fold CV mean ± sd): " + ", ".join(
            f"{name} {_r2(s)}" for name, s in models.items()))


def _print_by_discipline(result: dict) -> None:
    from scitaste_hf.index.weights import CONFIDENCE, SHARED
    from scitaste_hf.schema import DIMENSIONS

    columns = {**result["disciplines"], SHARED: result["shared"]}
    width = 26
    print(f"weights derived per discipline from {result['n_records']} records (method {result['method']}); "
          f"weight % with its {CONFIDENCE:.0%} interval (jackknife over the 5 cross-validation folds); {SHARED}: "
          "all records pooled")
    print(_header(columns, width))
    for key in DIMENSIONS:
        print(f"{key:<{_KEY}}" + "".join(f"{_weight(r, key):>{width}}" for r in columns.values()))
    for target in result["shared"]["r2"]:
        print(f"{f'RF R2 of {target}':<{_KEY}}" + "".join(
            f"{_r2(r['r2'][target]['random_forest']):>{width}}" for r in columns.values()))
    print("  (RF R2: the random forest's test R2, with the mean ± sd of its 5 cross-validation folds)")
    disciplines = list(result["disciplines"])
    print(f"\ntransfer: each vector's composites against a discipline's own, on that discipline's papers "
          f"({CONFIDENCE:.0%} bootstrap intervals over the papers, {result['n_resamples']} resamples, vectors fixed)")
    formats = {"spearman": ("Spearman of composites", ".3f", 1), "top_decile_overlap": ("top-decile overlap", ".2f", 1),
               "mean_abs_difference": ("mean |composite difference| (points)", ".2f", 1),
               "wape": ("WAPE of the own composites (%)", ".1f", 100)}
    for metric, (title, spec, scale) in formats.items():
        print(f"{title}\n{'vector / discipline':<{_KEY}}" + "".join(f"{d:>{width}}" for d in disciplines))
        for source, row in result["transfer"].items():
            cells = [_cell(row[target][metric], spec, scale) if target in row else "own" for target in disciplines]
            print(f"{source:<{_KEY}}" + "".join(f"{c:>{width}}" for c in cells))
    verdict = result["verdict"]
    if verdict["shared_defensible"]:
        print(f"\nverdict: the {SHARED} vector is defensible on this data: it passes the rule in every discipline.")
    else:
        print(f"\nverdict: the {SHARED} vector is NOT defensible on this data; per-discipline vectors "
              "(--weights on this command's --json) reproduce each discipline's composites where it does not:")
        for discipline, reasons in verdict["failing"].items():
            print(f"  {discipline}: {'; '.join(reasons)}")
    print(f"rule: {verdict['rule']}.")


def run(args: argparse.Namespace) -> int:
    """Run ``scitaste weights derive`` or ``scitaste weights fit``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of :func:`add_arguments`.

    Returns
    -------
    int
        0 on success; errors are raised as :class:`~scitaste_hf.errors.ScitasteError`.
    """
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.index import weights as w
    from scitaste_hf.schema import DIMENSIONS

    by_discipline = args.by == "discipline"
    if args.weights_command == "derive" and not by_discipline and (args.n_resamples, args.seed) != (None, None):
        raise InvalidInput("--n-resamples and --seed set the transfer table's bootstrap of --by discipline")
    if args.json:
        check_writable(args.json)
    need_score = args.weights_command == "fit"
    if by_discipline:
        dims, score, disciplines = w.load_records_by_discipline(args.records, need_score=need_score)
    else:
        dims, score = w.load_records(args.records, need_score=need_score)
    if args.weights_command == "derive" and by_discipline:
        from scitaste_hf.scoring.bootstrap import N_RESAMPLES

        result = w.derive_by_discipline(dims, disciplines, args.method, seed=args.seed or 0,
                                        n_resamples=N_RESAMPLES if args.n_resamples is None else args.n_resamples)
        _print_by_discipline(result)
    elif args.weights_command == "derive":
        result = w.derive_weights(dims, args.method)
        _print_derive(result)
    elif by_discipline:
        result = w.fit_by_discipline(dims, score, disciplines)
        print("weights recovered per discipline")
        print(_header(result["disciplines"], 18))
        for key in DIMENSIONS:
            print(f"{key:<{_KEY}}" + "".join(f"{v[key]:>18.4f}" for v in result["weights"].values()))
        for name, label in (("residual_rmse", "residual RMSE"), ("max_abs_residual", "max |residual|")):
            print(f"{label:<{_KEY}}" + "".join(f"{f[name]:>18.4f}" for f in result["disciplines"].values()))
    else:
        result = w.fit_weights(dims, score)
        print(f"weights recovered from {result['n_records']} records")
        for key, weight in result["weights"].items():
            print(f"{key:<24}{weight:>9.4f}")
        print(f"residual RMSE {result['residual_rmse']:.4f}, max |residual| {result['max_abs_residual']:.4f}")
    if args.json:
        write_json_atomic(args.json, finite_json(result))
    return 0
