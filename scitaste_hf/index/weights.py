"""Weight vectors from records (docs/index-dimensions.md#weights, docs/weights.md): derive them with the paper's
regressions, or recover the vector a published record set was built with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, validate_weights

#: The regressors of the derivation (docs/weights.md#weights-derive), by name.
MODELS: tuple[str, ...] = ("linear", "ridge", "lasso", "random_forest", "gradient_boosting")
METHODS: dict[str, tuple[str, ...]] = {"ensemble": MODELS, "rf": ("random_forest",)}
SEED = 42
#: The smallest record set on which an 80/20 split and 5-fold cross-validation are meaningful.
MIN_RECORDS_DERIVE = 10


def _read_table(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    if path.is_file():
        try:
            return pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScitasteError(f"{path} is not a readable Parquet file: {exc}") from None
    if not path.is_dir():
        raise ScitasteError(f"records not found: {path}")
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        import datasets

        loaded = datasets.load_from_disk(str(path))
        parts = loaded.values() if isinstance(loaded, datasets.DatasetDict) else [loaded]
        return pa.concat_tables([part.data.table for part in parts], promote_options="default")
    if (path / "data").is_dir():
        # A dataset in the Hub layout: its splits, not the configs beside them (tool_evidence).
        path = path / "data"
    files = sorted(path.rglob("*.parquet"))
    if not files:
        raise ScitasteError(f"{path} holds no Parquet files and is not a saved dataset")
    return pa.concat_tables([_read_table(f) for f in files], promote_options="default")


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


def _analysis(x: np.ndarray, y: np.ndarray, models: tuple[str, ...]) -> tuple[np.ndarray, dict]:
    """Mean normalised contribution of each feature over the models, and each model's test and CV R^2."""
    from sklearn.model_selection import KFold, cross_val_score, train_test_split

    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=SEED)
    folds = KFold(n_splits=5, shuffle=True, random_state=SEED)
    contributions, scores = [], {}
    for name in models:
        model = _model(name).fit(x_train, y_train)
        cv = cross_val_score(_model(name), x, y, cv=folds, scoring="r2")
        scores[name] = {"test": float(model.score(x_test, y_test)), "cv_mean": float(cv.mean()),
                        "cv_std": float(cv.std())}
        share = _contributions(model)
        # A model that zeroes every coefficient (lasso on a flat target) says nothing about importance.
        if share.any():
            contributions.append(share)
    if not contributions:
        raise ScitasteError("no regressor found any feature informative; the records' dimensions are constant")
    return np.mean(contributions, axis=0), scores


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
        ``weights`` (normalised, sums to 1), ``raw`` (contributions in percent before renormalisation, as in
        the paper's tables), ``r2`` (per target, per model: ``test``, ``cv_mean``, ``cv_std``), ``method`` and
        ``n_records``.

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
    a, g = 0, len(DIMENSIONS) - 1
    share_1, r2_1 = _analysis(dims[:, 1:], dims[:, a], models)
    share_2, r2_2 = _analysis(dims[:, :-1], dims[:, g], models)
    raw = np.empty(len(DIMENSIONS))
    raw[a] = share_2[0]
    raw[g] = share_1[-1]
    raw[1:g] = (share_1[:-1] + share_2[1:]) / 2
    weights = validate_weights(dict(zip(DIMENSIONS, (raw / raw.sum()).tolist())))
    return {
        "method": method,
        "n_records": int(dims.shape[0]),
        "weights": weights,
        "raw": {key: float(100 * value) for key, value in zip(DIMENSIONS, raw)},
        "r2": {DIMENSIONS[a]: r2_1, DIMENSIONS[g]: r2_2},
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
