"""Derive the Academic Taste Index weights from records, or recover the weights a record set was built with."""

from __future__ import annotations

import argparse
import math

from scitaste_hf.output import check_writable, write_json_atomic


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
                                        "from theirs; average the regressors' contributions into a weight vector.")
    derive.add_argument("--method", choices=("ensemble", "rf"), default="ensemble",
                        help="all five regressors (default) or the random forest alone")
    fit = sub.add_parser("fit", help="recover the weights of a record set by non-negative least squares",
                         description="Fit innovation_score on the seven dimensions (weights >= 0, sum 1) and "
                                     "report the residual, to check a dataset's composites for consistency.")
    for action in (derive, fit):
        action.add_argument("--records", required=True, metavar="PATH",
                            help="a Parquet file of records, a folder of them, or a saved dataset folder")
        action.add_argument("--json", metavar="OUT", help="also write the result as JSON to OUT")


def _finite(value):
    # A degenerate cross-validation score is NaN; strict JSON has no NaN, so it is written as null.
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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
    from scitaste_hf.index.weights import derive_weights, fit_weights, load_records

    if args.json:
        check_writable(args.json)
    if args.weights_command == "derive":
        dims, _ = load_records(args.records, need_score=False)
        result = derive_weights(dims, args.method)
        print(f"weights derived from {result['n_records']} records (method {result['method']})")
        print(f"{'dimension':<24}{'raw %':>9}{'weight':>9}")
        for key, weight in result["weights"].items():
            print(f"{key:<24}{result['raw'][key]:>9.2f}{weight:>9.4f}")
        for target, models in result["r2"].items():
            print(f"predicting {target}: " + ", ".join(
                f"{name} R2 test {s['test']:.3f} / CV {s['cv_mean']:.3f}" for name, s in models.items()))
    else:
        dims, score = load_records(args.records, need_score=True)
        result = fit_weights(dims, score)
        print(f"weights recovered from {result['n_records']} records")
        for key, weight in result["weights"].items():
            print(f"{key:<24}{weight:>9.4f}")
        print(f"residual RMSE {result['residual_rmse']:.4f}, max |residual| {result['max_abs_residual']:.4f}")
    if args.json:
        write_json_atomic(args.json, _finite(result))
    return 0
