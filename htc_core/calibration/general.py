"""The General Agent Calibrator as a model file: two HTC calibrators and the rule that picks one per run.

Runs with top-k alternatives and runs without them give systematically different features (TopkConf and
Top1Conf fall back to r), and a calibrator fitted on one kind transfers badly to the other (measured by
:func:`htc_core.calibration.gac.gac_leave_one_out`, strategy "pooled" vs "by-kind"). So a GAC holds:

- ``with_alternatives``: an HTC calibrator on ``paper``-profile features, fitted on the runs that list
  alternatives; it scores runs that list them;
- ``without_alternatives``: an HTC calibrator on ``chosen``-profile features (alternatives ignored, so
  every run has the same definitions), fitted on all runs; it scores runs without alternatives (and every
  run when the first model is absent).

Optionally (``transfer``, chosen leave-one-family-out by :mod:`htc_core.calibration.transfer_eval`), the
routed model's logit is combined with a training-free signal of the run
(:mod:`htc_core.calibration.transfer_methods`): ``sigmoid(a z + b logit(signal) + c)``.
:meth:`GeneralCalibrator.assess` gives every zero-shot score its applicability verdict and expected ECE range
(:mod:`htc_core.calibration.expected_error`, from the card's leave-one-family-out points).

The file is JSON (``"format": "htc-gac"``) holding both model files and the model card; never pickle.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .calibrators import HTCCalibrator
from .gac import WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES
from .grouping import has_alternatives
from .model_file import read_model_file

__all__ = ["GeneralCalibrator", "GACScores", "GAC_FORMAT", "GAC_FORMAT_VERSION", "fit_general", "load_any_model"]

GAC_FORMAT = "htc-gac"
GAC_FORMAT_VERSION = 1
KINDS = (WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES)


@dataclass
class GACScores:
    """Zero-shot confidences of a GAC for each run, and which of its models scored it."""

    name: str
    variant: str
    ids: np.ndarray
    confidence: np.ndarray
    kind: np.ndarray            # "with_alternatives" / "without_alternatives" per run

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"id": self.ids, "confidence": self.confidence, "gac_model": self.kind})

    def to_dict(self) -> dict:
        return {"model": self.name, "variant": self.variant,
                "runs": [{"id": str(i), "confidence": float(c), "gac_model": str(k)}
                         for i, c, k in zip(self.ids, self.confidence, self.kind)]}

    def counts(self) -> dict:
        return {k: int((self.kind == k).sum()) for k in KINDS}


class GeneralCalibrator:
    """A GAC: ``models`` maps ``"with_alternatives"`` / ``"without_alternatives"`` to fitted
    :class:`HTCCalibrator` s (the first may be None); ``card`` is the model card (a JSON object)."""

    def __init__(self, models: dict, *, name: str = "gac", card: dict | None = None, transfer: dict | None = None):
        if models.get(WITHOUT_ALTERNATIVES) is None:
            raise ValueError("models must hold a 'without_alternatives' calibrator (it scores every run without "
                             "alternatives)")
        unknown = set(models) - set(KINDS)
        if unknown:
            raise ValueError(f"models keys must be among {KINDS}, got {sorted(unknown)}")
        self.models = {k: models.get(k) for k in KINDS}
        self.name = name
        self.card = dict(card or {})
        self.transfer = _check_transfer(transfer)

    @property
    def variant(self) -> str:
        return self.models[WITHOUT_ALTERNATIVES].variant

    def kinds(self, ts) -> np.ndarray:
        """Which model scores each run: "with_alternatives" or "without_alternatives"."""
        alt = has_alternatives(ts)
        if self.models[WITH_ALTERNATIVES] is None:
            alt[:] = False
        return np.where(alt, WITH_ALTERNATIVES, WITHOUT_ALTERNATIVES).astype(object)

    def decision_function(self, ts) -> np.ndarray:
        """The routed model's logit per run (before any ``transfer`` combination)."""
        from ..features import extract

        kinds = self.kinds(ts)
        z = np.empty(len(kinds))
        for kind in KINDS:
            rows = np.flatnonzero(kinds == kind)
            if len(rows):
                m = self.models[kind]
                sub = ts if len(rows) == len(kinds) else ts.take(rows)
                z[rows] = m.decision_function(extract(sub, profile=m.profile_, top_k=m.top_k_))
        return z

    def predict_proba(self, ts) -> np.ndarray:
        """[n, 2] for a TraceSet: each run scored by its kind's model on that model's features (combined with
        the ``transfer`` signal when the file holds one)."""
        from .transfer_methods import logit, sigmoid, training_free_signals

        z = self.decision_function(ts)
        if self.transfer is not None:
            a, b, c = self.transfer["coef"]
            sig = training_free_signals(ts)[self.transfer["signal"]].to_numpy()
            sig = np.where(np.isfinite(sig), sig, self.transfer.get("fill", 0.5))
            zs = logit(sig)
            z = a * z + b * zs + c
            fb = self.transfer.get("fallback")
            if fb:      # runs of a kind no training run had: the signal alone (see fit_transfer)
                rows = np.isin(self.kinds(ts), fb["kinds"])
                z[rows] = fb["coef"][1] * zs[rows] + fb["coef"][2]
        p = sigmoid(z)
        return np.column_stack([1.0 - p, p])

    def assess(self, shift_report, alternatives: np.ndarray, confidence: np.ndarray):
        """The applicability verdict and expected ECE range (:class:`~.expected_error.ExpectedError`) of a run set
        from its shift report, which runs list top-k alternatives, and the GAC's confidences."""
        from .expected_error import expected_ece
        from .transfer_methods import em_prior

        info = self.card.get("expected_error") or {}
        rate = float(info.get("training_rate", self.models[WITHOUT_ALTERNATIVES].training_summary_.get(
            "positive_rate", 0.5)))
        raw = np.asarray(confidence, dtype=np.float64)
        measures = {"max_shift": 0.0 if not shift_report.known or np.isnan(shift_report.max_shift)
                    else float(shift_report.max_shift),
                    "rate_gap": abs(float(raw.mean()) - rate) if raw.size else 0.0,
                    "em_gap": abs(em_prior(raw, rate).prior - rate) if raw.size else 0.0,
                    "missing_topk": float((~np.asarray(alternatives, bool)).mean())
                    - float(info.get("training_share_without_alternatives", 0.0)) if raw.size else 0.0}
        return expected_ece(list(info.get("points") or []), measures, confidence)

    def score(self, ts) -> GACScores:
        """Every run of a TraceSet scored zero-shot (labels not needed)."""
        return GACScores(name=self.name, variant=self.variant, ids=np.asarray(ts.ids, dtype=object),
                         confidence=self.predict_proba(ts)[:, 1], kind=self.kinds(ts))

    def to_dict(self) -> dict:
        return {"format": GAC_FORMAT, "format_version": GAC_FORMAT_VERSION, "name": self.name,
                "variant": self.variant,
                "routing": "runs that list top-k alternatives -> models.with_alternatives ('paper' profile); "
                           "runs without -> models.without_alternatives ('chosen' profile)",
                "models": {k: (None if m is None else m.to_dict()) for k, m in self.models.items()},
                "transfer": self.transfer, "card": self.card}

    def save(self, path: str | Path) -> Path:
        """Write the GAC as JSON (atomic: a failed save leaves the previous file intact)."""
        from ..atomic import write_text

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "GeneralCalibrator":
        if not isinstance(obj, dict) or obj.get("format") != GAC_FORMAT:
            raise ValueError(f"{source} is not a GAC model file (expected \"format\": \"{GAC_FORMAT}\")")
        ver = obj.get("format_version")
        if not isinstance(ver, int) or not 1 <= ver <= GAC_FORMAT_VERSION:
            raise ValueError(f"{source} is not a valid GAC model file: unsupported format_version {ver!r}")
        models = obj.get("models")
        if not isinstance(models, dict):
            raise ValueError(f"{source} is not a valid GAC model file: 'models' must be an object")
        parsed = {k: HTCCalibrator.from_dict(v, source=f"{source} (models.{k})")
                  for k, v in models.items() if v is not None and k in KINDS}
        try:
            return cls(parsed, name=str(obj.get("name", "gac")), card=obj.get("card") or {},
                       transfer=obj.get("transfer"))
        except ValueError as e:
            raise ValueError(f"{source} is not a valid GAC model file: {e}") from None

    @classmethod
    def load(cls, path: str | Path) -> "GeneralCalibrator":
        return cls.from_dict(read_model_file(path), source=str(Path(path)))

    def __repr__(self) -> str:
        have = [k for k, m in self.models.items() if m is not None]
        return f"GeneralCalibrator(name={self.name!r}, variant={self.variant!r}, models={have})"


def _check_transfer(t) -> dict | None:
    """None, or ``{"method", "signal", "coef": [a, b, c]}`` with a known signal and three finite numbers."""
    from .transfer_methods import SIGNALS

    if t is None:
        return None
    if not isinstance(t, dict) or t.get("signal") not in SIGNALS:
        raise ValueError(f"'transfer' must be an object whose 'signal' is one of {sorted(SIGNALS)}, got {t!r}")
    coef = t.get("coef")
    if (not isinstance(coef, list) or len(coef) != 3 or
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in coef)):
        raise ValueError(f"'transfer.coef' must be a list of three finite numbers, got {coef!r}")
    fb = t.get("fallback")
    if fb is not None and (not isinstance(fb, dict) or not isinstance(fb.get("kinds"), list)
                           or not set(fb["kinds"]) <= set(KINDS) or not isinstance(fb.get("coef"), list)
                           or len(fb["coef"]) != 3 or not all(isinstance(v, (int, float)) and math.isfinite(v)
                                                              for v in fb["coef"])):
        raise ValueError(f"'transfer.fallback' must be {{'kinds': [...], 'coef': [a, b, c]}}, got {fb!r}")
    return {**t, "coef": [float(v) for v in coef]}


def fit_general(ts, *, variant: str = "reduced", name: str = "gac", card: dict | None = None, seed: int = 42,
                top_k: int = 5, **fit_kw) -> GeneralCalibrator:
    """Fit a GAC on every labeled run of ``ts``: the with-alternatives model on the runs that list them
    (skipped when fewer than 2 of each outcome do), the without-alternatives model on all runs."""
    from ..features import extract

    ts = ts.labeled()
    y = ts.labels
    alt = has_alternatives(ts)
    models = {}
    rows = np.flatnonzero(alt)
    if len(rows) and min(int(y[rows].sum()), int(len(rows) - y[rows].sum())) >= 2:
        sub = ts.take(rows)
        models[WITH_ALTERNATIVES] = HTCCalibrator(variant=variant, random_state=seed, **fit_kw).fit(
            extract(sub, profile="paper", top_k=top_k), y[rows], meta=sub.meta)
    models[WITHOUT_ALTERNATIVES] = HTCCalibrator(variant=variant, random_state=seed, **fit_kw).fit(
        extract(ts, profile="chosen", top_k=top_k), y, meta=ts.meta)
    return GeneralCalibrator(models, name=name, card=card)


def load_any_model(path: str | Path):
    """An :class:`HTCCalibrator`, an :class:`~htc_core.calibration.gam.HTCGAM` or a :class:`GeneralCalibrator`,
    whichever the JSON file holds."""
    obj = read_model_file(path)
    if isinstance(obj, dict) and obj.get("format") == GAC_FORMAT:
        return GeneralCalibrator.from_dict(obj, source=str(Path(path)))
    if isinstance(obj, dict) and obj.get("format") == "htc-gam":
        from .gam import HTCGAM

        return HTCGAM.from_dict(obj, source=str(Path(path)))
    return HTCCalibrator.from_dict(obj, source=str(Path(path)))
