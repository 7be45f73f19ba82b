"""Weight vectors from records (docs/index-dimensions.md#weights, docs/weights.md): derive them with the paper's
regressions, or recover the vector a published record set was built with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.schema import DIMENSIONS, SPLITS, WAPE_BANDS
from scitaste_hf.scoring.bootstrap import CONFIDENCE, N_RESAMPLES
from scitaste_hf.taxonomy import discipline_order
from scitaste_hf.weights import DEFAULT_VECTOR, validate_weights

#: The regressors of the derivation (docs/weights.md#weights-derive), by name.
MODELS: tuple[str, ...] = ("linear", "ridge", "lasso", "random_forest", "gradient_boosting")
METHODS: dict[str, tuple[str, ...]] = {"ensemble": MODELS, "rf": ("random_forest",)}
SEED = 42
#: The smallest record set on which an 80/20 split and 5-fold cross-validation are meaningful.
MIN_RECORDS_DERIVE = 10


def _split_order(path: Path) -> tuple[int, str]:
    """Parquet files in the order of the splits (:data:`~scitaste_hf.schema.SPLITS`: ``selected`` then ``backup``,
    as the dataset card lists them and ``load_dataset`` gives them), each split's shards in order, other files after
    in name order. The order matters: the derivation's 80/20 split is drawn over the rows as read."""
    split = path.name.split("-", 1)[0]
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), str(path))


def _read_table(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    if path.is_file():
        try:
            return pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScitasteError(f"{path} is not a readable Parquet file: {exc}") from None
    if not path.is_dir():
        raise ScitasteError(f"{path} is not a regular file" if path.exists() else f"records not found: {path}")
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        import datasets

        try:
            loaded = datasets.load_from_disk(str(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a missing or malformed file of the layout
            raise ScitasteError(f"{path} is not a readable saved dataset ({first_line(exc)})") from None
        parts = loaded.values() if isinstance(loaded, datasets.DatasetDict) else [loaded]
        return _concat([part.data.table for part in parts], path)
    if (path / "data").is_dir():
        # A dataset in the Hub layout: its splits, not the configs beside them (tool_evidence).
        path = path / "data"
    files = sorted(path.rglob("*.parquet"), key=_split_order)
    if not files:
        raise ScitasteError(f"{path} holds no Parquet files and is not a saved dataset")
    return _concat([_read_table(f) for f in files], path)


def _concat(tables: list[pa.Table], path: Path) -> pa.Table:
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # a column of one type in a part, another in the next
        raise ScitasteError(f"records in {path}: its Parquet files do not share one schema ({first_line(exc)})"
                            ) from None


def load_records(path: str | Path, *, need_score: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Read the seven dimension scores (and the innovation score) of a record set.

    Parameters
    ----------
    path : str or path-like
        A Parquet file, a folder of Parquet files, a dataset folder in the Hub layout (its ``data/`` splits are
        read), or a folder written by ``datasets.save_to_disk``; every split is read.
    need_score : bool
        Whether ``innovation_score`` is required.

    Returns
    -------
    dims : ndarray of float, shape (n, 7)
        Columns in :data:`~scitaste_hf.schema.DIMENSIONS` order, from the ``dimension_scores`` struct or from
        top-level columns of the same names.
    score : ndarray of float, shape (n,), or None
        ``innovation_score`` when ``need_score``.

    Raises
    ------
    ScitasteError
        On a missing file or column, or a null, non-finite or out-of-range (0-100) score.
    """
    table = _read_table(Path(path))
    return _dimensions(table, path, need_score)


def load_records_by_discipline(path: str | Path, *, need_score: bool
                               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """:func:`load_records` and each record's ``discipline``.

    Returns
    -------
    dims, score
        As in :func:`load_records`.
    disciplines : ndarray of str, shape (n,)

    Raises
    ------
    ScitasteError
        As :func:`load_records`, and when the records have no ``discipline`` column or a record has none.
    """
    table = _read_table(Path(path))
    if "discipline" not in table.column_names:
        raise ScitasteError(f"records in {path} have no discipline column; --by discipline needs one")
    try:
        labels = table.column("discipline").cast(pa.string()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise ScitasteError(f"records in {path}: discipline must be text, got {table.column('discipline').type}"
                            ) from None
    bad = [i for i, d in enumerate(labels) if not d or not d.strip()]
    if bad:
        raise ScitasteError(f"records in {path}: {len(bad)} record(s) have no discipline, first at row {bad[0]}")
    dims, score = _dimensions(table, path, need_score)
    return dims, score, np.array(labels, dtype=object)


def _dimensions(table: pa.Table, path: str | Path, need_score: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The checked dimension matrix (and innovation scores) of a records table."""
    if "dimension_scores" in table.column_names:
        struct = table.column("dimension_scores").combine_chunks()
        names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
        source = {name: pc.struct_field(struct, name) for name in names}
    else:
        source = {name: table.column(name) for name in table.column_names}
    missing = [key for key in DIMENSIONS if key not in source]
    if missing:
        raise ScitasteError(f"records in {path} lack dimension score(s) {', '.join(missing)}")
    columns = {key: source[key] for key in DIMENSIONS}
    if need_score:
        if "innovation_score" not in table.column_names:
            raise ScitasteError(f"records in {path} have no innovation_score column")
        columns["innovation_score"] = table.column("innovation_score")
    values = {}
    for key, column in columns.items():
        try:
            arr = column.cast(pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ScitasteError(f"records in {path}: {key} must be numbers, got {column.type}") from None
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ScitasteError(f"records in {path}: {key} is null or not finite in {bad.size} record(s), "
                                f"first at row {bad[0]}")
        bad = np.flatnonzero((arr < 0) | (arr > 100))
        if bad.size:
            raise ScitasteError(f"records in {path}: {key} is outside 0-100 in {bad.size} record(s), first at row "
                                f"{bad[0]} ({arr[bad[0]]:g})")
        values[key] = arr
    dims = np.column_stack([values[key] for key in DIMENSIONS])
    return dims, values.get("innovation_score")


def _model(name: str):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Lasso, LinearRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    estimator = {
        "linear": lambda: LinearRegression(),
        "ridge": lambda: Ridge(alpha=1.0),
        "lasso": lambda: Lasso(alpha=0.1),
        "random_forest": lambda: RandomForestRegressor(n_estimators=100, random_state=SEED, n_jobs=-1),
        "gradient_boosting": lambda: GradientBoostingRegressor(n_estimators=100, random_state=SEED),
    }[name]()
    return make_pipeline(StandardScaler(), estimator)


def _contributions(model) -> np.ndarray:
    estimator = model[-1]
    raw = np.abs(estimator.coef_) if hasattr(estimator, "coef_") else estimator.feature_importances_
    total = raw.sum()
    return raw / total if total > 0 else np.zeros_like(raw)


def _shares(models) -> np.ndarray | None:
    """Mean normalised contribution of each feature over fitted models; None when none found any feature
    informative. A model that zeroes every coefficient (lasso on a flat target) says nothing about importance."""
    contributions = [share for share in map(_contributions, models) if share.any()]
    return np.mean(contributions, axis=0) if contributions else None


def _analysis(x: np.ndarray, y: np.ndarray, models: tuple[str, ...]) -> tuple[np.ndarray, dict, list]:
    """Mean normalised contribution of each feature over the models, each model's test and CV R^2, and the
    contributions of the models refitted on each cross-validation fold's training part (None for a fold on
    which no model found any feature informative)."""
    from sklearn.model_selection import KFold, cross_validate, train_test_split

    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=SEED)
    folds = KFold(n_splits=5, shuffle=True, random_state=SEED)
    fitted, scores, fold_models = [], {}, []
    for name in models:
        model = _model(name).fit(x_train, y_train)
        cv = cross_validate(_model(name), x, y, cv=folds, scoring="r2", return_estimator=True)
        scores[name] = {"test": float(model.score(x_test, y_test)), "cv_mean": float(cv["test_score"].mean()),
                        "cv_std": float(cv["test_score"].std())}
        fitted.append(model)
        fold_models.append(cv["estimator"])
    share = _shares(fitted)
    if share is None:
        raise ScitasteError("no regressor found any feature informative; the records' dimensions are constant")
    return share, scores, [_shares(fold) for fold in zip(*fold_models)]


def _combine(share_1: np.ndarray, share_2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The raw vector (contributions, summing to more than 1) and the weights from the two analyses' shares:
    B..F the mean of their two contributions, A from analysis 2, G from analysis 1."""
    a, g = 0, len(DIMENSIONS) - 1
    raw = np.empty(len(DIMENSIONS))
    raw[a] = share_2[0]
    raw[g] = share_1[-1]
    raw[1:g] = (share_1[:-1] + share_2[1:]) / 2
    return raw, raw / raw.sum()


def _jackknife_interval(point: np.ndarray, folds: list[np.ndarray], confidence: float) -> np.ndarray | None:
    """A (7, 2) interval around ``point`` from the weights refitted without each fold: the grouped (delete-a-fold)
    jackknife standard error, sqrt((K-1)/K * sum (w_k - mean)^2), times Student's t with K-1 degrees of freedom;
    None with fewer than two usable folds."""
    from scipy.stats import t

    if len(folds) < 2:
        return None
    stacked = np.array(folds)
    k = stacked.shape[0]
    se = np.sqrt((k - 1) / k * ((stacked - stacked.mean(axis=0)) ** 2).sum(axis=0))
    half = t.ppf(0.5 + confidence / 2, k - 1) * se
    return np.clip(np.column_stack([point - half, point + half]), 0.0, 1.0)


def derive_weights(dims: np.ndarray, method: str = "ensemble") -> dict:
    """Derive a weight vector from records by the two analyses of docs/weights.md#weights-derive.

    Analysis 1 predicts citation_impact (A) from B..G, analysis 2 journal_impact (G) from A..F, each with the
    regressors of ``method`` on standardised features (seed 42, 80/20 split, 5-fold CV). B..F take the mean
    of their two contributions, A its contribution in analysis 2 and G in analysis 1.

    Parameters
    ----------
    dims : ndarray of float, shape (n, 7)
        Dimension scores in :data:`~scitaste_hf.schema.DIMENSIONS` order; n >= 10.
    method : {"ensemble", "rf"}
        All five regressors, or the random forest alone (the paper's Table 4).

    Returns
    -------
    dict
        ``weights`` (normalised, sums to 1), ``weights_interval`` (per dimension, the 95% interval of the
        weight from the models the cross-validation refits without each fold: a grouped jackknife, see
        docs/weights.md#uncertainty; None when fewer than two folds found any feature informative), ``raw``
        (contributions in percent before renormalisation, as in the paper's tables), ``r2`` (per target, per
        model: ``test``, ``cv_mean``, ``cv_std``), ``method`` and ``n_records``.

    Raises
    ------
    ScitasteError
        On an unknown method or fewer than 10 records.
    """
    if method not in METHODS:
        raise ScitasteError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    dims = np.asarray(dims, dtype=float)
    if dims.shape[0] < MIN_RECORDS_DERIVE:
        raise ScitasteError(f"deriving weights needs at least {MIN_RECORDS_DERIVE} records, got {dims.shape[0]}")
    models = METHODS[method]
    share_1, r2_1, folds_1 = _analysis(dims[:, 1:], dims[:, 0], models)
    share_2, r2_2, folds_2 = _analysis(dims[:, :-1], dims[:, -1], models)
    raw, weights = _combine(share_1, share_2)
    # The two analyses use the same folds of the same records, so fold k of each pairs into one refitted vector.
    folds = [_combine(f1, f2)[1] for f1, f2 in zip(folds_1, folds_2) if f1 is not None and f2 is not None]
    interval = _jackknife_interval(weights, folds, CONFIDENCE)
    return {
        "method": method,
        "n_records": int(dims.shape[0]),
        "weights": validate_weights(dict(zip(DIMENSIONS, weights.tolist()))),
        "weights_interval": None if interval is None else {k: row.tolist() for k, row in zip(DIMENSIONS, interval)},
        "raw": {key: float(100 * value) for key, value in zip(DIMENSIONS, raw)},
        "r2": {DIMENSIONS[0]: r2_1, DIMENSIONS[-1]: r2_2},
    }


def fit_weights(dims: np.ndarray, score: np.ndarray) -> dict:
    """Recover the weight vector a record set was built with: least squares of ``innovation_score`` on the seven
    dimensions, with non-negative weights that sum to 1.

    Parameters
    ----------
    dims : ndarray of float, shape (n, 7)
        Dimension scores in :data:`~scitaste_hf.schema.DIMENSIONS` order; n >= 7.
    score : ndarray of float, shape (n,)
        The records' innovation scores.

    Returns
    -------
    dict
        ``weights``, ``residual_rmse`` and ``max_abs_residual`` (in score points; about 0.003 for a consistent
        set whose scores were rounded to 2 decimals) and ``n_records``.

    Raises
    ------
    ScitasteError
        With fewer than 7 records.
    """
    from scipy.optimize import nnls

    dims = np.asarray(dims, dtype=float)
    score = np.asarray(score, dtype=float)
    n, k = dims.shape
    if n < k:
        raise ScitasteError(f"recovering {k} weights needs at least {k} records, got {n}")
    # The sum-to-one constraint as one heavily weighted extra equation; nnls keeps the weights >= 0.
    penalty = 1e4 * max(1.0, float(np.abs(dims).max())) * np.sqrt(n)
    design = np.vstack([dims, np.full((1, k), penalty)])
    target = np.append(score, penalty)
    w, _ = nnls(design, target, maxiter=50 * k)
    w /= w.sum()
    residual = dims @ w - score
    return {
        "n_records": int(n),
        "weights": validate_weights(dict(zip(DIMENSIONS, w.tolist()))),
        "residual_rmse": float(np.sqrt(np.mean(residual ** 2))),
        "max_abs_residual": float(np.abs(residual).max()),
    }


def fit_by_discipline(dims: np.ndarray, score: np.ndarray, disciplines: np.ndarray) -> dict:
    """:func:`fit_weights` within each discipline: the vectors a record set built with per-discipline weights
    used.

    Parameters
    ----------
    dims, score
        As in :func:`fit_weights`.
    disciplines : ndarray of str, shape (n,)
        Each record's discipline.

    Returns
    -------
    dict
        ``disciplines`` (per discipline, :func:`fit_weights`'s result) and ``weights`` (discipline -> vector,
        the ``weights`` object of a per-discipline weights file, docs/weights.md#per-discipline-weights).

    Raises
    ------
    ScitasteError
        When a discipline has fewer records than there are weights, naming it.
    """
    fits = {}
    for discipline, mask in _groups(disciplines, len(DIMENSIONS), "recovering the weights"):
        fits[discipline] = fit_weights(dims[mask], score[mask])
    return {"disciplines": fits, "weights": {d: fit["weights"] for d, fit in fits.items()}}


#: The fewest records a discipline needs for ``weights derive --by discipline``: a test split of 10 papers for
#: its R^2 and a top decile of 5 papers for the transfer table.
MIN_RECORDS_BY_DISCIPLINE = 50
#: The shared vector is defensible on a record set when, within every discipline, a predictor that reproduced
#: the discipline's own composites exactly would, at the worse end of the 95% intervals, keep at least this rank
#: correlation with the shared vector's composites (losing at most 5 of the 100 points of Scheme 1's s_rho) ...
SHARED_SPEARMAN_MIN = 0.95
#: ... and stay within Scheme 2's top grade band, a WAPE below this (docs/weights.md#weights-derive---by-discipline).
SHARED_WAPE_MAX = WAPE_BANDS[0].high
#: The share of a discipline's papers that the transfer table's top-decile overlap compares.
TOP_SHARE = 0.1
#: The name of the pooled vector in the transfer table and the ``default`` of the weights it writes.
SHARED = "shared"


def _groups(disciplines: np.ndarray, minimum: int, what: str) -> list[tuple[str, np.ndarray]]:
    """Each discipline and its records' mask, in the benchmark's order then by name; an error naming the first
    discipline with fewer than ``minimum`` records."""
    disciplines = np.asarray(disciplines, dtype=object)
    present = set(disciplines.tolist())
    order = discipline_order(present)
    groups = [(d, disciplines == d) for d in order]
    for discipline, mask in groups:
        if mask.sum() < minimum:
            raise ScitasteError(f"discipline {discipline!r} has {int(mask.sum())} records; {what} per discipline "
                                f"needs at least {minimum}")
    return groups


def _top_counts(values: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """How many of each paper's copies in each resample fall in the resample's ``k`` highest values (B, n); equal
    values keep the papers' order, and a paper's copies are interchangeable."""
    order = np.argsort(-values, kind="stable")
    sorted_counts = counts[:, order]
    before = np.cumsum(sorted_counts, axis=1) - sorted_counts
    top = np.empty_like(sorted_counts)
    top[:, order] = np.clip(k - before, 0, sorted_counts)
    return top


def transfer(dims: np.ndarray, own: np.ndarray, other: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0,
             confidence: float = CONFIDENCE) -> dict:
    """How well composites under ``other`` reproduce those under ``own`` on the same papers, with percentile
    bootstrap intervals over the papers (the vectors held fixed).

    Parameters
    ----------
    dims : ndarray of float, shape (n, 7)
        The papers' dimension scores.
    own, other : ndarray of float, shape (7,)
        The papers' own weight vector and the one that stands in for it.
    n_resamples, seed, confidence
        The bootstrap's resamples of the papers, its seed and the intervals' coverage.

    Returns
    -------
    dict
        ``spearman`` (of the two composites), ``top_decile_overlap`` (the share of the papers in the top
        :data:`TOP_SHARE` under ``own`` that are also there under ``other``), ``mean_abs_difference`` (of the
        composites, in score points) and ``wape`` (that difference over the mean composite under ``own``: the
        Scheme-2 WAPE of predicting ``own``'s composites with ``other``'s), each ``{"value": x, "interval":
        [lo, hi]}``; and ``n``.
    """
    from scitaste_hf.scoring.bootstrap import percentile_interval, resample_counts
    from scitaste_hf.scoring.stats import Counts, Ranked, spearman

    x, y = dims @ own, dims @ other
    n = x.shape[0]
    k = max(1, int(np.ceil(TOP_SHARE * n)))
    rx, ry = Ranked(x), Ranked(y)
    out = {}
    for counts in (np.ones((1, n), dtype=np.int64), resample_counts(n, n_resamples, seed)):
        c = Counts(counts)
        values = {"spearman": spearman(ry, rx, c),
                  "top_decile_overlap": np.minimum(_top_counts(x, counts, k), _top_counts(y, counts, k)).sum(1) / k,
                  "mean_abs_difference": c.f @ np.abs(y - x) / c.total}
        with np.errstate(invalid="ignore", divide="ignore"):
            values["wape"] = c.f @ np.abs(y - x) / (c.f @ x)
        if not out:
            out = {name: {"value": float(v[0])} for name, v in values.items()}
        else:
            for name, v in values.items():
                out[name]["interval"] = percentile_interval(v, confidence)
    return out | {"n": int(n)}


#: The verdict's rule, as the report states it.
VERDICT_RULE = (f"the shared vector is defensible when, in every discipline, composites computed with the "
                f"discipline's own vector would, at the worse end of the {CONFIDENCE:.0%} intervals, keep a Spearman "
                f"correlation of at least {SHARED_SPEARMAN_MIN} with the shared vector's and a WAPE against them "
                f"below {SHARED_WAPE_MAX:.0%} (Scheme 2's top grade band)")


def _failures(cell: dict) -> list[str]:
    """Why the shared vector fails the verdict's rule on one discipline's transfer cell (empty: it passes)."""
    rho, wape = cell["spearman"]["interval"], cell["wape"]["interval"]
    out = []
    if rho is None or rho[0] < SHARED_SPEARMAN_MIN:
        out.append(f"Spearman {cell['spearman']['value']:.3f} {_span(rho, '.3f')} below {SHARED_SPEARMAN_MIN}")
    if wape is None or wape[1] >= SHARED_WAPE_MAX:
        out.append(f"WAPE {cell['wape']['value']:.1%} {_span(wape, '.1%')} not below {SHARED_WAPE_MAX:.0%}")
    return out


def _span(interval: list[float] | None, spec: str) -> str:
    """An interval as text, ``[n/a]`` when the resamples left it undefined."""
    return "[n/a]" if interval is None else f"[{interval[0]:{spec}}, {interval[1]:{spec}}]"


def derive_by_discipline(dims: np.ndarray, disciplines: np.ndarray, method: str = "ensemble", *,
                         n_resamples: int = N_RESAMPLES, seed: int = 0) -> dict:
    """The paper's derivation within each discipline, the shared (pooled) derivation, and how well each vector
    transfers to the other disciplines (docs/weights.md#weights-derive---by-discipline).

    Parameters
    ----------
    dims : ndarray of float, shape (n, 7)
        Dimension scores in :data:`~scitaste_hf.schema.DIMENSIONS` order.
    disciplines : ndarray of str, shape (n,)
        Each record's discipline; each needs :data:`MIN_RECORDS_BY_DISCIPLINE` records.
    method : {"ensemble", "rf"}
        As in :func:`derive_weights`.
    n_resamples, seed
        The transfer table's bootstrap over the papers of each discipline.

    Returns
    -------
    dict
        ``disciplines`` (per discipline, :func:`derive_weights`'s result), ``shared`` (the derivation on all
        records), ``transfer`` (source vector -> target discipline -> :func:`transfer`'s result, for every
        discipline's vector and :data:`SHARED` on every other discipline), ``verdict`` (``shared_defensible``,
        ``rule``, ``spearman_min``, ``wape_max``, ``failing``: discipline -> why the shared vector fails there)
        and ``weights`` (discipline -> vector plus ``default``: the shared vector; a per-discipline weights file).

    Raises
    ------
    ScitasteError
        On an unknown method, or a discipline with fewer than :data:`MIN_RECORDS_BY_DISCIPLINE` records (named).
    """
    if method not in METHODS:
        raise ScitasteError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    dims = np.asarray(dims, dtype=float)
    groups = _groups(disciplines, MIN_RECORDS_BY_DISCIPLINE, "deriving weights")
    derived = {d: derive_weights(dims[mask], method) for d, mask in groups}
    shared = derive_weights(dims, method)
    vectors = {name: np.array([r["weights"][k] for k in DIMENSIONS]) for name, r in [*derived.items(),
                                                                                   (SHARED, shared)]}
    table = {source: {target: transfer(dims[mask], vectors[target], vector, n_resamples=n_resamples, seed=seed)
                      for target, mask in groups if target != source}
             for source, vector in vectors.items()}
    failing = {d: reasons for d, cell in table[SHARED].items() if (reasons := _failures(cell))}
    verdict = {"shared_defensible": not failing, "rule": VERDICT_RULE, "spearman_min": SHARED_SPEARMAN_MIN,
               "wape_max": SHARED_WAPE_MAX, "failing": failing}
    return {"method": method, "n_records": int(dims.shape[0]), "disciplines": derived, "shared": shared,
            "transfer": table, "verdict": verdict, "n_resamples": n_resamples, "seed": seed,
            "weights": {**{d: r["weights"] for d, r in derived.items()}, DEFAULT_VECTOR: shared["weights"]}}
