"""What every scorer read from a model file shares: its attributes from the file, and scikit-learn's
``predict_proba`` and ``predict`` on top of the scorer's own ``decision_function``.

:class:`~htc_core.calibration.linear_scoring.LinearScorer` (HTC models) and
:class:`~htc_core.calibration.gam_scoring.GAMScorer` (HTC-GAM models) derive from :class:`FileScorer`; each
defines how a file is read (``from_dict``), checked (``checked``) and turned into a logit
(``decision_function``). numpy alone: no scikit-learn, as for the scorers.
"""

from __future__ import annotations

import numpy as np

from .solvers import sigmoid

__all__ = ["FileScorer"]


class FileScorer:
    """The base of the scorers read from a model file: the file's parameters and learned attributes set as
    attributes, and the probabilities and the predicted outcome from the subclass's ``decision_function``.

    Parameters
    ----------
    params : dict
        The constructor parameters recorded in the file, set as attributes.
    state : dict
        The learned attributes (``coef_``, ``classes_``, ...), set as attributes.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.calibration.file_scorer import FileScorer
    >>> class Even(FileScorer):                       # a logit of 0: even odds for every run
    ...     def decision_function(self, X):
    ...         return np.zeros(len(X))
    >>> scorer = Even({"variant": "even"}, {"classes_": np.array([0, 1])})
    >>> scorer.variant, scorer.predict_proba([[1.0], [2.0]]).tolist()
    ('even', [[0.5, 0.5], [0.5, 0.5]])
    """

    def __init__(self, params: dict, state: dict):
        for name, value in {**params, **state}.items():
            setattr(self, name, value)

    def decision_function(self, X) -> np.ndarray:
        """The logit of the calibrated confidence of each run: each scorer defines it.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            The logit; here a NotImplementedError (a subclass's method replaces this one).

        Examples
        --------
        >>> from htc_core.calibration.file_scorer import FileScorer
        >>> FileScorer({}, {}).decision_function([[1.0]])
        Traceback (most recent call last):
        ...
        NotImplementedError: FileScorer has no decision_function: use LinearScorer or GAMScorer
        """
        raise NotImplementedError(f"{type(self).__name__} has no decision_function: use LinearScorer or GAMScorer")

    def predict_proba(self, X) -> np.ndarray:
        """The calibrated probabilities of failure and success.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs, 2)
            Probability of failure, probability of success (the calibrated confidence): the sigmoid of
            ``decision_function``, as the fitted estimator's.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.linear_scoring import LinearScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> model = htc.HTCCalibrator(alphas=(1.0,)).fit_traces(ts)
        >>> LinearScorer.from_dict(model.to_dict()).predict_proba(htc.extract(ts)).shape
        (250, 2)
        """
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The predicted outcome: the success class where the calibrated confidence exceeds 0.5.

        Parameters
        ----------
        X : FeatureMatrix or array of shape (n_runs, n_features)
            Features of the model's profile and top-k.

        Returns
        -------
        ndarray of shape (n_runs,)
            1 where the confidence exceeds 0.5 (a positive logit), else 0: the fitted estimator's ``predict``.

        Examples
        --------
        >>> import htc_core as htc
        >>> from htc_core.calibration.gam import HTCGAM
        >>> from htc_core.calibration.gam_scoring import GAMScorer
        >>> ts, _ = htc.load("sample_runs/units/units_SmolLM2-135M-greedy.jsonl")
        >>> fm = htc.extract(ts)
        >>> gam = HTCGAM(alphas=(16.0,), linear_alphas=(1.0,), select="gam").fit(fm, ts.labels)
        >>> bool((GAMScorer.from_dict(gam.to_dict()).predict(fm) == gam.predict(fm)).all())
        True
        """
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
