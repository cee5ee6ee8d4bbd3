"""Learning-based baselines on the 48 HTC features (paper appendix "Learning-based Baselines").

scikit-learn style estimators (``fit`` / ``predict_proba`` / ``predict``, ``get_params`` / ``set_params``,
``classes_``), seeded by ``random_state``, with the appendix hyperparameters as defaults:

* :class:`MLPBaseline`: 48 -> 32 -> 16 -> 2, ReLU, dropout, L2 penalty alpha = 0.01, Adam, early stopping
  (PyTorch; the paper gives no dropout rate, learning rate or batch size: we use dropout 0.2, Adam lr 0.001,
  batch 32).
* :class:`XGBoostBaseline`: 100 trees of depth 3, learning rate 0.1, row / column subsampling 0.8,
  L1 0.1 and L2 1.0 (``xgboost``; NaN features go to the trees' default branch).
* :class:`GPBaseline`: Gaussian process classifier, RBF + white-noise kernel, 3 optimizer restarts, up to
  100 iterations in prediction (scikit-learn only, so it runs without the extra).

The sequence models (LSTM, Transformer on the raw top-k log-probabilities) are in
:mod:`htc_core.experiments.sequence_models`. PyTorch and xgboost live in the optional extra ``[learning]``;
importing this module imports neither, and a missing one raises :class:`MissingExtraError` (an ImportError)
saying ``pip install -e ".[learning]"``. Features are median-imputed (NaN) and standardized on the training
rows only, inside ``fit``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ..calibration.blas_threads import one_blas_thread

# torch_fit and torch_proba are the training loop and prediction the MLP and the sequence models share, not part
# of the interface (nor are check_binary, check_features and LearningBaseline)
__all__ = ["MissingExtraError", "require", "MLPBaseline", "XGBoostBaseline", "GPBaseline", "INSTALL_HINT"]

INSTALL_HINT = 'pip install -e ".[learning]"  (PyTorch CPU and xgboost-cpu)'


class MissingExtraError(ImportError):
    """An optional package of the ``[learning]`` extra is not installed (an ImportError).

    Raised by :func:`require`; its message names what needs the package and the install command
    (``INSTALL_HINT``).

    Examples
    --------
    >>> from htc_core.experiments.learning import MissingExtraError, require
    >>> issubclass(MissingExtraError, ImportError)
    True
    >>> require("no_such_package", "the example")
    Traceback (most recent call last):
    ...
    htc_core.experiments.learning.MissingExtraError: the example needs the optional package 'no_such_package', ...
    """


def require(module: str, what: str):
    """Import an optional module, or raise :class:`MissingExtraError` naming what needs it and how to install it.

    Parameters
    ----------
    module : str
        The module's name ("torch", "xgboost").
    what : str
        What needs it, for the message ("the MLP baseline").

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        If it cannot be imported.

    Examples
    --------
    >>> from htc_core.experiments.learning import require
    >>> require("numpy", "the example").__name__
    'numpy'
    >>> require("no_such_package", "the example")
    Traceback (most recent call last):
    ...
    htc_core.experiments.learning.MissingExtraError: the example needs the optional package 'no_such_package', which is
    not installed: pip install -e ".[learning]"  (PyTorch CPU and xgboost-cpu)
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"{what} needs the optional package {module!r}, which is not installed: "
                                f"{INSTALL_HINT}") from None


# ------------------------------------------------------------------ validation shared by the estimators
def check_binary(X, y, *, allow_nd: bool = False):
    """(X float64, y int 0/1) or ValueError naming the argument; X may carry NaN."""
    from sklearn.utils.validation import check_X_y

    X, y = check_X_y(X, y, ensure_all_finite="allow-nan", allow_nd=allow_nd, dtype=np.float64)
    classes = np.unique(y)
    if not np.isin(classes, [0, 1]).all():
        raise ValueError(f"y must hold 0/1 success labels, got values {classes[:5].tolist()}")
    if len(classes) < 2:
        raise ValueError(f"y must hold both outcomes (0 and 1) to fit a classifier, got only {classes.tolist()}")
    return X, y.astype(np.int64)


def check_features(est, X, *, allow_nd: bool = False) -> np.ndarray:
    """X float64 checked against the fitted estimator ``est``'s input shape (NaN allowed)."""
    from sklearn.utils.validation import check_array, check_is_fitted

    check_is_fitted(est, "classes_")
    X = check_array(X, ensure_all_finite="allow-nan", allow_nd=allow_nd, dtype=np.float64)
    if X.shape[1:] != est.input_shape_:
        raise ValueError(f"X must have shape (n, {', '.join(map(str, est.input_shape_))}) like the training data, "
                         f"got {X.shape}")
    return X


class LearningBaseline(ClassifierMixin, BaseEstimator):
    """The common base of the learning baselines (here and in :mod:`.sequence_models`): ``predict``
    thresholds ``predict_proba`` at 0.5."""
    def predict(self, X) -> np.ndarray:
        """1 where the success probability is at least 0.5, else 0."""
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(np.int64)


class _Prep:
    """Median imputation + standardization fitted on the training rows only."""

    def __init__(self, X: np.ndarray):
        med = np.nanmedian(np.where(np.isfinite(X), X, np.nan), axis=0)
        self.med = np.where(np.isfinite(med), med, 0.0)
        Z = self._impute(X)
        self.mu, sd = Z.mean(axis=0), Z.std(axis=0)
        self.sd = np.where(sd > 1e-12, sd, 1.0)

    def _impute(self, X):
        return np.where(np.isfinite(X), X, self.med)

    def __call__(self, X):
        return (self._impute(X) - self.mu) / self.sd


# ------------------------------------------------------------------ the shared PyTorch training loop
class _TorchInputs:
    """The inputs of one fit or prediction as tensors, built ONCE: ``x`` float32 (NaN -> 0), and for padded
    sequences (``sequences=True``, X ``[n, L, C]``, a NaN first channel = padding) the padding mask ``pad``
    (bool ``[n, L]``; an empty run keeps position 0 unmasked, so it attends to one zero token, never to
    nothing) and ``ends`` (each run's last real position + 1, at least 1). ``rows(idx)`` gives a module's
    arguments for those rows: ``(x,)``, or ``(x, pad)`` cut to the rows' own longest run when ``trim`` (the
    padding after it is masked, so this changes no output: see the sequence models' doc)."""

    def __init__(self, torch, X: np.ndarray, *, sequences: bool, trim: bool = True):
        self.torch, self.sequences, self.trim = torch, sequences, trim
        self.x = torch.as_tensor(np.nan_to_num(X, nan=0.0) if sequences else X, dtype=torch.float32)
        if sequences:
            pad = np.isnan(X[..., 0]) if X.shape[1] else np.zeros((len(X), 0), bool)
            if pad.shape[1]:
                pad[:, 0] &= ~pad.all(axis=1)
            real = ~pad
            ends = np.where(real.any(axis=1), pad.shape[1] - np.argmax(real[:, ::-1], axis=1), 1)
            self.pad, self.ends = torch.as_tensor(pad), ends.astype(np.int64)

    def rows(self, idx) -> tuple:
        """A module's arguments for rows ``idx``: ``(x,)``, or ``(x, pad)`` cut to their longest run."""
        if not self.sequences:
            return (self.x[idx],)
        if not self.trim:
            return self.x[idx], self.pad[idx]
        L = int(self.ends[np.asarray(idx)].max(initial=1))
        return self.x[:, :L][idx], self.pad[:, :L][idx]

    def logits(self, module, idx: np.ndarray, chunk: int = 128):
        """Eval-mode logits of rows ``idx`` (in that order), sequences in chunks of similar length."""
        torch = self.torch
        order = np.argsort(self.ends[idx], kind="stable") if self.sequences else np.arange(len(idx))
        parts = [module(*self.rows(torch.as_tensor(idx[order[s:s + chunk]]))) for s in range(0, len(idx), chunk)]
        out = torch.cat(parts) if parts else torch.zeros((0, 2))
        return out[torch.as_tensor(np.argsort(order, kind="stable"))]


def torch_fit(module, X: np.ndarray, y: np.ndarray, *, lr: float, batch_size: int, max_epochs: int, patience: int,
              weight_decay: float, seed: int, validation_fraction: float = 0.2, sequences: bool = False,
              trim: bool = True):
    """Train ``module`` (x -> 2 logits; ``x, pad`` for padded ``sequences``) with Adam on cross-entropy; early
    stopping on the validation log-loss of a stratified ``validation_fraction`` of the training rows (the best
    epoch's weights are kept). With too few rows for a validation part (fewer than 2 per class in it) it trains
    ``max_epochs // 4`` epochs. One CPU thread, seeded: the same seed gives the same weights. Sequence
    mini-batches are cut to their own longest run (``trim``; ``False`` keeps the full padded length: the
    reference path of the tests). Returns the number of epochs run."""
    import torch
    from sklearn.model_selection import train_test_split

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        idx = np.arange(len(y))
        n_val = int(round(validation_fraction * len(y)))
        if n_val >= 4 and min(np.bincount(y, minlength=2)) >= 4:
            tr, va = train_test_split(idx, test_size=n_val, stratify=y, random_state=seed)
        else:
            tr, va = idx, None
        data = _TorchInputs(torch, X, sequences=sequences, trim=trim)
        yt = torch.as_tensor(y, dtype=torch.long)
        # foreach: one kernel per update step for all parameters (the same arithmetic as the per-tensor loop)
        opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
        loss_fn = torch.nn.CrossEntropyLoss()
        best, best_state, bad, epochs = np.inf, None, 0, max_epochs if va is not None else max(1, max_epochs // 4)
        tr_t = torch.as_tensor(tr)
        y_va = None if va is None else yt[torch.as_tensor(va)]
        for epoch in range(epochs):
            module.train()
            for b in tr_t[torch.randperm(len(tr_t), generator=gen)].split(batch_size):
                opt.zero_grad()
                loss_fn(module(*data.rows(b)), yt[b]).backward()
                opt.step()
            if va is None:
                continue
            module.eval()
            with torch.inference_mode():
                v = float(loss_fn(data.logits(module, va), y_va))
            if v < best - 1e-6:
                best, bad = v, 0
                best_state = {k: t.detach().clone() for k, t in module.state_dict().items()}
            else:
                bad += 1
                if bad >= patience:
                    break
        if best_state is not None:
            module.load_state_dict(best_state)
        module.eval()
        return epoch + 1
    finally:
        torch.set_num_threads(threads)


def torch_proba(module, X: np.ndarray, *, sequences: bool = False, trim: bool = True) -> np.ndarray:
    """Success probabilities ``[n, 2]`` (float64) of a module trained by :func:`torch_fit`, one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        module.eval()
        with torch.inference_mode():
            logits = _TorchInputs(torch, X, sequences=sequences, trim=trim).logits(module, np.arange(len(X)))
            return torch.softmax(logits, dim=1).numpy().astype(np.float64)
    finally:
        torch.set_num_threads(threads)


# ------------------------------------------------------------------ MLP (PyTorch)
class MLPBaseline(LearningBaseline):
    """Two-hidden-layer MLP on the 48 features (PyTorch, the ``[learning]`` extra).

    48 -> ``hidden`` (32, 16) -> 2, ReLU and dropout after each hidden layer, L2 penalty ``alpha`` = 0.01
    (paper), Adam, early stopping on a stratified 20 % validation part of the training rows (the best epoch's
    weights kept; with fewer than 4 runs of an outcome there, ``max_epochs // 4`` epochs without one). Features
    are median-imputed and standardized on the training rows. One CPU thread, seeded.

    Parameters
    ----------
    hidden : tuple of int, default (32, 16)
        The hidden layers' widths.
    dropout : float, default 0.2
        Dropout after each hidden layer (the paper gives no rate).
    alpha : float, default 0.01
        The L2 penalty (Adam's weight decay).
    lr : float, default 0.001
        Adam's learning rate.
    batch_size : int, default 32
        Mini-batch size.
    max_epochs : int, default 200
        The most epochs.
    patience : int, default 10
        Epochs without a better validation log-loss before stopping.
    random_state : int, default 0
        The seed of the weights, the batches and the validation split.

    Examples
    --------
    PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA wheels),
    so the lines that fit are skipped here:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> from htc_core.experiments.learning import MLPBaseline
    >>> mlp = MLPBaseline(hidden=(8,), max_epochs=20)
    >>> mlp.get_params()["hidden"], mlp.get_params()["alpha"]
    ((8,), 0.01)
    >>> mlp.fit(X, y).predict_proba(X).shape                 # doctest: +SKIP
    (40, 2)
    """

    def __init__(self, hidden=(32, 16), dropout: float = 0.2, alpha: float = 0.01, lr: float = 1e-3,
                 batch_size: int = 32, max_epochs: int = 200, patience: int = 10, random_state: int = 0):
        self.hidden = hidden
        self.dropout = dropout
        self.alpha = alpha
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.random_state = random_state

    def fit(self, X, y):
        """Train the MLP on the features of labeled runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            The features (NaN allowed: median-imputed).
        y : array-like of shape (n_runs,)
            0/1 labels, both present.

        Returns
        -------
        MLPBaseline
            Fitted: ``module_``, ``prep_``, ``n_epochs_``, ``classes_``.

        Raises
        ------
        ValueError
            If ``y`` is not 0/1 with both outcomes.
        MissingExtraError
            If PyTorch is not installed.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.experiments.learning import MLPBaseline
        >>> mlp = MLPBaseline(max_epochs=20).fit(X, y)              # doctest: +SKIP
        >>> 1 <= mlp.n_epochs_ <= 20                                # doctest: +SKIP
        True
        """
        X, y = check_binary(X, y)
        torch = require("torch", "the MLP baseline")
        self.input_shape_ = X.shape[1:]
        self.prep_ = _Prep(X)
        torch.manual_seed(int(self.random_state))
        layers, d = [], X.shape[1]
        for h in self.hidden:
            layers += [torch.nn.Linear(d, int(h)), torch.nn.ReLU(), torch.nn.Dropout(float(self.dropout))]
            d = int(h)
        self.module_ = torch.nn.Sequential(*layers, torch.nn.Linear(d, 2))
        # Adam's weight_decay adds alpha * w to the gradient: the L2 penalty alpha/2 ||w||^2
        self.n_epochs_ = torch_fit(self.module_, self.prep_(X), y, lr=self.lr, batch_size=int(self.batch_size),
                                   max_epochs=int(self.max_epochs), patience=int(self.patience),
                                   weight_decay=float(self.alpha), seed=int(self.random_state))
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Failure and success probabilities of runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Features with the training data's columns.

        Returns
        -------
        numpy.ndarray of shape (n_runs, 2)
            Column 1 is the success probability.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.experiments.learning import MLPBaseline
        >>> mlp = MLPBaseline(max_epochs=20).fit(X, y)              # doctest: +SKIP
        >>> mlp.predict_proba(X[:3]).sum(axis=1)                    # doctest: +SKIP
        array([1., 1., 1.])
        """
        X = check_features(self, X)
        return torch_proba(self.module_, self.prep_(X))


# ------------------------------------------------------------------ XGBoost
class XGBoostBaseline(LearningBaseline):
    """Gradient-boosted trees on the 48 features with the paper's settings (xgboost, the ``[learning]`` extra).

    One thread, seeded; NaN features go to the trees' default branch.

    Parameters
    ----------
    n_estimators : int, default 100
        Trees.
    max_depth : int, default 3
        Their depth.
    learning_rate : float, default 0.1
        Shrinkage.
    subsample : float, default 0.8
        Rows sampled per tree.
    colsample_bytree : float, default 0.8
        Columns sampled per tree.
    reg_alpha : float, default 0.1
        L1 penalty on the leaf weights.
    reg_lambda : float, default 1.0
        L2 penalty on the leaf weights.
    random_state : int, default 0
        The seed.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> from htc_core.experiments.learning import XGBoostBaseline
    >>> model = XGBoostBaseline(n_estimators=20).fit(X, y)
    >>> model.predict_proba(X[:3]).round(3)
    array([[0.311, 0.689],
           [0.279, 0.721],
           [0.374, 0.626]])
    >>> model.score(X, y)                                  # accuracy on the training rows
    0.925
    """

    def __init__(self, n_estimators: int = 100, max_depth: int = 3, learning_rate: float = 0.1,
                 subsample: float = 0.8, colsample_bytree: float = 0.8, reg_alpha: float = 0.1,
                 reg_lambda: float = 1.0, random_state: int = 0):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the trees on the features of labeled runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            The features (NaN allowed).
        y : array-like of shape (n_runs,)
            0/1 labels, both present.

        Returns
        -------
        XGBoostBaseline
            Fitted: ``booster_``, ``classes_``.

        Raises
        ------
        ValueError
            If ``y`` is not 0/1 with both outcomes.
        MissingExtraError
            If xgboost is not installed.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.experiments.learning import XGBoostBaseline
        >>> XGBoostBaseline(n_estimators=20).fit(X, y).classes_
        array([0, 1])
        >>> XGBoostBaseline().fit(X, np.ones(40))
        Traceback (most recent call last):
        ...
        ValueError: y must hold both outcomes (0 and 1) to fit a classifier, got only [1.0]
        """
        X, y = check_binary(X, y)
        xgb = require("xgboost", "the XGBoost baseline")
        self.input_shape_ = X.shape[1:]
        self.booster_ = xgb.XGBClassifier(
            n_estimators=int(self.n_estimators), max_depth=int(self.max_depth), learning_rate=self.learning_rate,
            subsample=self.subsample, colsample_bytree=self.colsample_bytree, reg_alpha=self.reg_alpha,
            reg_lambda=self.reg_lambda, random_state=int(self.random_state), n_jobs=1, tree_method="hist",
            eval_metric="logloss")
        self.booster_.fit(np.where(np.isfinite(X), X, np.nan), y)
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Failure and success probabilities of runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Features with the training data's columns (NaN allowed).

        Returns
        -------
        numpy.ndarray of shape (n_runs, 2)
            Column 1 is the success probability.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.experiments.learning import XGBoostBaseline
        >>> model = XGBoostBaseline(n_estimators=20).fit(X, y)
        >>> X_new = X[:2].copy()
        >>> X_new[1, 0] = np.nan                                # a missing feature takes the default branch
        >>> model.predict_proba(X_new).shape
        (2, 2)
        """
        X = check_features(self, X)
        return self.booster_.predict_proba(np.where(np.isfinite(X), X, np.nan)).astype(np.float64)


# ------------------------------------------------------------------ Gaussian process (scikit-learn)
class GPBaseline(LearningBaseline):
    """Gaussian process classifier on the standardized 48 features (scikit-learn only).

    Kernel ``C * RBF + WhiteKernel`` (paper: RBF combined with white noise). Our decision: hyperparameter bounds
    C in [0.01, 100], RBF length scale in [0.1, 100] x sqrt(d), white noise in [0.001, 10] (the restarts draw
    their starts inside them). Cost grows as n^3 in the training rows.

    Parameters
    ----------
    n_restarts_optimizer : int, default 3
        Random restarts of the kernel's optimizer (paper: three).
    max_iter_predict : int, default 100
        Newton iterations of the Laplace approximation in prediction (paper).
    random_state : int, default 0
        The restarts' seed.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> from htc_core.calibration.blas_threads import one_blas_thread
    >>> from htc_core.experiments.learning import GPBaseline
    >>> with one_blas_thread():                   # small matrices: BLAS threads only cost time here
    ...     gp = GPBaseline(n_restarts_optimizer=0).fit(X, y)
    >>> gp.predict_proba(X[:3]).round(3)
    array([[0.236, 0.764],
           [0.155, 0.845],
           [0.22 , 0.78 ]])
    """

    def __init__(self, n_restarts_optimizer: int = 3, max_iter_predict: int = 100, random_state: int = 0):
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the Gaussian process on the features of labeled runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            The features (NaN allowed: median-imputed).
        y : array-like of shape (n_runs,)
            0/1 labels, both present.

        Returns
        -------
        GPBaseline
            Fitted: ``gp_``, ``prep_``, ``classes_``.

        Raises
        ------
        ValueError
            If ``y`` is not 0/1 with both outcomes.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.calibration.blas_threads import one_blas_thread
        >>> from htc_core.experiments.learning import GPBaseline
        >>> with one_blas_thread():               # small matrices: BLAS threads only cost time here
        ...     gp = GPBaseline(n_restarts_optimizer=0).fit(X, y)
        >>> gp.classes_, gp.score(X, y)
        (array([0, 1]), 1.0)
        """
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessClassifier
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

        X, y = check_binary(X, y)
        self.input_shape_ = X.shape[1:]
        self.prep_ = _Prep(X)
        # bounded hyperparameters: the restarts start from draws inside the bounds, and the default
        # (1e-5, 1e5) bounds made them wander into degenerate kernels that take minutes to fit
        d = float(np.sqrt(X.shape[1]))
        kernel = (ConstantKernel(1.0, (1e-2, 1e2)) * RBF(length_scale=d, length_scale_bounds=(0.1 * d, 100 * d))
                  + WhiteKernel(0.1, (1e-3, 10.0)))
        self.gp_ = GaussianProcessClassifier(kernel=kernel, n_restarts_optimizer=int(self.n_restarts_optimizer),
                                             max_iter_predict=int(self.max_iter_predict),
                                             random_state=int(self.random_state))
        # one BLAS thread: the kernel matrices (a few hundred runs) are far too small for BLAS threads, which only
        # spin (blas_threads.py); every caller of fit gets it, not only the learning curves
        with warnings.catch_warnings(), one_blas_thread():
            warnings.simplefilter("ignore", ConvergenceWarning)   # a kernel bound reached is not a user error
            self.gp_.fit(self.prep_(X), y)
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Failure and success probabilities of runs.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Features with the training data's columns.

        Returns
        -------
        numpy.ndarray of shape (n_runs, 2)
            Column 1 is the success probability.

        Raises
        ------
        ValueError
            If ``X`` has other columns than the training data.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
        >>> from htc_core.calibration.blas_threads import one_blas_thread
        >>> from htc_core.experiments.learning import GPBaseline
        >>> with one_blas_thread():               # small matrices: BLAS threads only cost time here
        ...     gp = GPBaseline(n_restarts_optimizer=0).fit(X, y)
        >>> gp.predict_proba(X[:1]).round(3)
        array([[0.236, 0.764]])
        >>> gp.predict_proba(X[:1, :2])
        Traceback (most recent call last):
        ...
        ValueError: X must have shape (n, 3) like the training data, got (1, 2)
        """
        X = check_features(self, X)
        with one_blas_thread():
            return self.gp_.predict_proba(self.prep_(X)).astype(np.float64)
