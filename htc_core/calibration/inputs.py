"""Input validation shared by the calibrators (scikit-learn conventions: a ValueError naming the argument)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..features import FeatureMatrix

# the check_* / validate_* / align_* helpers are the calibrators' shared validation, not entry points
__all__ = ["TraceSetMixin", "expected_failed_checks"]


def check_X(X, name: str = "X") -> np.ndarray:
    """``X`` as a finite float 2-D array, else a ValueError naming ``name``."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D array of numbers, got {type(X).__name__}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D [n_samples, n_features], got an array of shape {arr.shape}")
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must be finite, got {float(arr[i, j])!r} at row {i}, column {j}")
    return arr


def check_y(y, n: int) -> np.ndarray:
    """``y`` as a float 1-D array of ``n`` 0/1 labels, else ValueError."""
    try:
        arr = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"y must be a 1-D array of 0/1 labels, got {type(y).__name__}") from None
    if arr.shape[0] != n:
        raise ValueError(f"y must have one label per row of X ({n}), got {arr.shape[0]}")
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y must contain only 0 and 1 (unlabeled rows removed), got {float(arr[i])!r} at index {i}")
    return arr


def unpack_features_and_names(X) -> tuple[Any, list[str] | None, tuple[str, int] | None]:
    """Accept an array, a DataFrame or a FeatureMatrix; return (values, feature names or None,
    (profile, top_k) or None). Only a FeatureMatrix knows the token-confidence profile it was computed with."""
    if isinstance(X, FeatureMatrix):
        return X.values, list(X.names), (str(X.profile), int(X.top_k))
    pd = sys.modules.get("pandas")      # a DataFrame exists only once pandas is imported: scoring stays light
    if pd is not None and isinstance(X, pd.DataFrame):
        return X.to_numpy(), [str(c) for c in X.columns], None
    return X, None, None


def default_feature_names(d: int) -> list[str]:
    """The paper's 48 names for 48 columns, else ``x0 .. x{d-1}``."""
    from ..features import FEATURE_NAMES

    return list(FEATURE_NAMES) if d == len(FEATURE_NAMES) else [f"x{i}" for i in range(d)]


def check_positive_int(value, name: str, minimum: int) -> None:
    """ValueError naming ``name`` unless ``value`` is an int (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")


# ------------------------------------------------ scikit-learn's validation, shared by every calibrator
def validate_fit_data(estimator, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str] | None,
                                                tuple[str, int] | None]:
    """Check ``fit``'s (X, y) with scikit-learn's public validation (``validate_data``: sets
    ``n_features_in_``) and the calibrators' rules: X finite, y binary with both classes present.

    Returns ``(X, y01, classes, names, of_matrix)``: X as float64 [n, d]; y01 the labels as 0.0/1.0, 1 for
    ``classes[1]`` (the success class); ``classes`` ``[0, 1]`` for 0/1 or boolean labels, else the two
    labels sorted; the column names (a FeatureMatrix's or a DataFrame's, else None); the FeatureMatrix's
    (profile, top_k) or None.
    """
    from sklearn.utils.validation import validate_data

    values, names, of_matrix = unpack_features_and_names(X)
    if y is not None:
        _reject_unlabeled(y)
    X, y = validate_data(estimator, values, y, dtype=np.float64, order="C", ensure_all_finite=False)
    check_finite(X)
    y01, classes = validate_labels(y)
    return X, y01, classes, names, of_matrix


def validate_labels(y, *, one_class: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(labels as 0.0/1.0, classes) of a 1-D binary target checked with scikit-learn's public helpers.

    ``classes`` is ``[0, 1]`` for 0/1 or boolean labels, else the two labels sorted; 1.0 marks
    ``classes[1]`` (the success class). ``one_class=True`` lets labels of a single outcome through
    (they must then be 0/1).
    """
    from sklearn.utils.multiclass import check_classification_targets, type_of_target

    check_classification_targets(y)
    y_type = type_of_target(y, input_name="y")
    if y_type != "binary":
        raise ValueError(f"Only binary classification is supported (success / failure). The type of the target "
                         f"is {y_type}.")
    classes = np.unique(y)
    if classes.dtype.kind in "biuf" and np.all(np.isin(classes, [0, 1])) and (one_class or classes.size == 2):
        classes = np.array([0, 1])
    elif classes.size < 2:
        raise ValueError(f"y holds one class only ({classes[0]!r}): a calibrator needs runs of both outcomes")
    return (y == classes[1]).astype(np.float64), classes


def _reject_unlabeled(y) -> None:
    """A ValueError naming the first NaN label (an unlabeled run) of ``y``."""
    arr = np.asarray(y)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        i = int(np.flatnonzero(np.isnan(arr.reshape(-1)))[0])
        raise ValueError(f"y holds NaN at index {i}: unlabeled runs cannot be fitted (fit on ts.labeled(), or "
                         "drop the rows whose label is missing)")


def check_finite(X: np.ndarray, name: str = "X") -> None:
    """Raise a ValueError naming the first non-finite entry (row, column) of the 2-D float array ``X``."""
    if not np.isfinite(X).all():
        i, j = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(f"{name} contains NaN or infinity: {float(X[i, j])!r} at row {i}, column {j} "
                         "(features must be finite)")


def check_predict_data(estimator, values) -> np.ndarray:
    """``values`` (already in the model's column order) checked with scikit-learn's ``check_array`` against
    the fitted ``n_features_in_``; float64 [n, d]."""
    from sklearn.utils.validation import check_array

    X = check_array(values, dtype=np.float64, order="C", ensure_all_finite=False, input_name="X")
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    check_finite(X)
    return X


def align_columns(values, names: list[str] | None, model_names: list[str]):
    """The columns of ``values`` in the model's order, found by name when ``names`` are known (a model of a
    subset of the features, or of another order, scores a full feature matrix correctly)."""
    if names is None or list(names) == model_names:
        return values
    index = {n: j for j, n in enumerate(names)}
    missing = [n for n in model_names if n not in index]
    if missing:
        raise ValueError(f"X lacks {len(missing)} feature(s) the model uses: {missing[:5]}")
    return np.asarray(values)[:, [index[n] for n in model_names]]


def check_saveable_labels(model) -> None:
    """Model files hold 0/1 labels (failure / success): a model fitted on other labels cannot be saved."""
    if not np.array_equal(np.asarray(model.classes_, dtype=object), np.array([0, 1], dtype=object)):
        raise ValueError(f"this model was fitted on the labels {list(model.classes_)}; model files hold 0/1 labels "
                         "(0 failure, 1 success): fit on 0/1 labels to save it")


def unpack_features(X) -> tuple[Any, list[str] | None, tuple[str, int] | None]:
    """(values, column names or None, (profile, top_k) or None) of an array, a DataFrame or a FeatureMatrix."""
    return unpack_features_and_names(X)


class TraceSetMixin:
    """The TraceSet-taking helpers beside a calibrator's ``fit(X, y)`` / ``predict_proba(X)``: the features
    are extracted with the calibrator's token-confidence profile and top-k (``profile`` / ``top_k``
    parameters before the fit, ``profile_`` / ``top_k_`` after it).

    :class:`~htc_core.calibration.calibrators.HTCCalibrator`, :class:`~htc_core.calibration.gam.HTCGAM` and
    :class:`~htc_core.calibration.general.GeneralCalibrator` inherit these methods.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.calibration.inputs import TraceSetMixin
    >>> issubclass(htc.HTCCalibrator, TraceSetMixin)
    True
    """

    def fit_traces(self, ts):
        """``fit`` on the features and labels of every labeled run of a TraceSet.

        Parameters
        ----------
        ts : TraceSet
            The runs; unlabeled runs are left out. The features are extracted with the ``profile`` and
            ``top_k`` parameters (``None``: ``"paper"`` and 5).

        Returns
        -------
        self
            The fitted calibrator.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts)
        >>> model.n_features_in_, model.profile_
        (48, 'paper')
        """
        from ..features import extract

        ts = ts.labeled()
        profile = getattr(self, "profile", None) or "paper"
        top_k = getattr(self, "top_k", None) or 5
        return self.fit(extract(ts, profile=profile, top_k=top_k), ts.labels, meta=ts.meta)

    def predict_proba_traces(self, ts) -> np.ndarray:
        """``predict_proba`` of the runs of a TraceSet, on features of the fitted model's profile and top-k.

        Parameters
        ----------
        ts : TraceSet
            The runs (labels not needed).

        Returns
        -------
        ndarray of shape (n_runs, 2)
            Probability of failure, probability of success.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the calibrator is not fitted.

        Examples
        --------
        >>> import htc_core as htc
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts).predict_proba_traces(ts).shape
        (250, 2)
        """
        from ..features import extract

        if not hasattr(self, "profile_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) or fit_traces(ts)")
        return self.predict_proba(extract(ts, profile=self.profile_, top_k=self.top_k_))


def validate_fit_input_with_prior(estimator, values, y) -> np.ndarray:
    """The labels (0.0/1.0) of an adapted fit, X and y checked as :func:`validate_fit_data` checks them; the
    labels must be 0/1 and may hold one outcome only (the prior is then kept)."""
    from sklearn.utils.validation import validate_data

    if y is not None:
        _reject_unlabeled(y)
    X, y = validate_data(estimator, values, y, dtype=np.float64, order="C", ensure_all_finite=False)
    check_finite(X)
    y01, classes = validate_labels(y, one_class=True)
    if not np.array_equal(classes, [0, 1]):
        raise ValueError(f"an adapted model takes 0/1 labels (0 failure, 1 success), got {list(classes)}")
    return y01


# ------------------------------------ scikit-learn's check_estimator: the checks each calibrator fails, and why
_N_ITER = ("max_iter caps every solve of the alpha path and of the inner CV (one per candidate penalty and "
           "fold); the solvers report no single iteration count, so there is no n_iter_")
_GAC_LAYOUT = ("a GAC fits and scores the layout of gac_features(ts) (a 0/1 has_alternatives column, then the "
               "paper-profile and the chosen-profile feature blocks of equal width), which the check's generic "
               "X does not have: refused with a ValueError saying so")
_PRIOR_COLUMNS = ("an adapted model works in its prior's features: X must hold the prior's columns, which the "
                  "check's generic X of another width does not: refused with a ValueError saying so")
_GAC_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_classifier_data_not_an_array", "check_classifiers_classes",
    "check_classifiers_train", "check_supervised_y_2d", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
)
_PRIOR_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_estimators_dtypes",
    "check_dtype_object", "check_pipeline_consistency", "check_estimators_pickle", "check_estimators_nan_inf",
    "check_f_contiguous_array_estimator", "check_classifier_data_not_an_array", "check_classifiers_classes",
    "check_classifiers_train", "check_supervised_y_2d", "check_decision_proba_consistency",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_fit2d_1sample",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d",
)


def expected_failed_checks(estimator) -> dict[str, str]:
    """The scikit-learn ``check_estimator`` checks this calibrator is expected to fail, each with its reason
    (scikit-learn's ``expected_failed_checks`` argument of ``check_estimator`` / ``parametrize_with_checks``,
    the successor of the ``_xfail_checks`` tag).

    Parameters
    ----------
    estimator : HTCCalibrator, HTCGAM or GeneralCalibrator
        The calibrator (an ``HTCCalibrator`` with a ``prior`` is the adapted model).

    Returns
    -------
    dict
        Check name -> why this calibrator fails it.

    Examples
    --------
    >>> from htc_core.calibration import HTCCalibrator
    >>> from htc_core.calibration.inputs import expected_failed_checks
    >>> list(expected_failed_checks(HTCCalibrator()))
    ['check_non_transformer_estimators_n_iter']
    """
    name = type(estimator).__name__
    if name == "GeneralCalibrator":
        return dict.fromkeys(_GAC_CHECKS, _GAC_LAYOUT)
    out = {"check_non_transformer_estimators_n_iter": _N_ITER}
    if getattr(estimator, "prior", None) is not None:
        out |= dict.fromkeys(_PRIOR_CHECKS, _PRIOR_COLUMNS)
        out["check_classifiers_one_label"] = ("labels of one outcome are legal when adapting: the prior is kept "
                                              "unchanged (it predicts both outcomes), documented in adapt.py")
    return out
