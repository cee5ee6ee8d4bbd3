"""The models shipped inside the package (JSON model files with their model cards).

``gac`` (GAC-Reduced) and ``gac-full`` (GAC-Full): General Agent Calibrators pre-trained on the project's
own runs (``sample_runs/``: SmolLM2-135M and Gemma 3 270M on six task families), written by
``python -m htc_dev.train_gac``, with the transfer method chosen leave-one-family-out. Each file's ``card``
says what it was trained on, how every candidate did zero-shot on each held-out family, and holds the points
the expected-error range of every zero-shot score is read from. ``gac-prefix``: a GAC-Reduced fitted on every prefix (first k steps)
of those runs, the live :class:`~htc_core.monitor.Monitor`'s default model, written by
``python -m htc_dev.train_gac_prefix``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .files import SHIPPED, shipped_path, model_path  # noqa: F401 (re-exported)

__all__ = ["SHIPPED", "DEFAULT_GAC", "DEFAULT_MONITOR", "ShippedModel", "shipped_models", "model_path", "load_model",
           "load_scorer"]

# the model the dashboard scores unlabeled runs with
DEFAULT_GAC = "gac"
# the model a live Monitor uses when none is given (trained on every prefix of every run)
DEFAULT_MONITOR = "gac-prefix"


@dataclass
class ShippedModel:
    """A model file that ships with htc: its name, where it is installed and its card.

    Parameters
    ----------
    name : str
        The name ``load_model`` and ``htc score`` accept (``"gac"``, ``"gac-full"``, ``"gac-prefix"``).
    path : pathlib.Path
        The JSON model file in this installation.
    card : dict
        The model card stored in the file (training data, leave-one-family-out table, expected errors).

    Examples
    --------
    >>> from htc_core.calibration.models import shipped_models
    >>> gac = next(m for m in shipped_models() if m.name == "gac")
    >>> gac.path.suffix, isinstance(gac.card, dict)
    ('.json', True)
    """

    name: str
    path: Path
    card: dict

    def to_dict(self) -> dict:
        """The model as plain JSON-ready values (the path as a string), as ``htc models --json`` prints it.

        Returns
        -------
        dict
            ``{"name": ..., "path": ..., "card": {...}}``.

        Examples
        --------
        >>> from htc_core.calibration.models import shipped_models
        >>> sorted(shipped_models()[0].to_dict())
        ['card', 'name', 'path']
        """
        return {"name": self.name, "path": str(self.path), "card": self.card}


def shipped_models() -> list[ShippedModel]:
    """Every shipped model present in this installation, with its card.

    Returns
    -------
    list of ShippedModel
        In the order of ``SHIPPED``; a model whose file is missing from the installation is left out.

    Examples
    --------
    >>> from htc_core.calibration.models import shipped_models
    >>> [m.name for m in shipped_models()]
    ['gac', 'gac-full', 'gac-prefix']
    """
    import json

    out = []
    for name in SHIPPED:
        path = shipped_path(name)
        if path.is_file():
            card = json.loads(path.read_text(encoding="utf-8")).get("card") or {}
            out.append(ShippedModel(name, path, card))
    return out


def load_model(model: str | Path):
    """A shipped model or a model file.

    Parameters
    ----------
    model : str or path
        A shipped name (``gac``, ``gac-full``, ``gac-prefix``) or a JSON model file.

    Returns
    -------
    GeneralCalibrator, HTCCalibrator or HTCGAM
        Whichever the file holds.

    Examples
    --------
    >>> import htc_core as htc
    >>> gac = htc.load_model("gac")
    >>> type(gac).__name__, gac.variant
    ('GeneralCalibrator', 'reduced')
    """
    from ..general import load_any_model

    return load_any_model(model_path(model))


def load_scorer(model: str | Path):
    """A shipped model or a model file, read for scoring only (what ``htc score`` loads).

    A GAC file gives a :class:`~htc_core.calibration.linear_scoring.GACScorer` and an HTC model file a
    :class:`~htc_core.calibration.linear_scoring.LinearScorer`: they score exactly as the estimators
    :func:`load_model` returns, with numpy only (no scikit-learn, scipy or pandas to import); so does the
    :class:`~htc_core.calibration.gam_scoring.GAMScorer` an HTC-GAM file gives.

    Parameters
    ----------
    model : str or path
        A shipped name (``gac``, ``gac-full``, ``gac-prefix``) or a JSON model file.

    Returns
    -------
    GACScorer, LinearScorer or GAMScorer
        Whichever the file holds; an invalid file raises the ValueError :func:`load_model` raises.

    Examples
    --------
    >>> from htc_core.calibration.models import load_scorer
    >>> scorer = load_scorer("gac")
    >>> type(scorer).__name__, scorer.variant
    ('GACScorer', 'reduced')
    """
    from ..linear_scoring import GAC_FORMAT, GACScorer, LinearScorer
    from ..model_file import read_model_file

    path = model_path(model)
    obj = read_model_file(path)
    fmt = obj.get("format") if isinstance(obj, dict) else None
    if fmt == GAC_FORMAT:
        return GACScorer.from_dict(obj, source=str(Path(path)))
    if fmt == "htc-gam":
        from ..gam_scoring import GAMScorer

        return GAMScorer.from_dict(obj, source=str(Path(path)))
    return LinearScorer.from_dict(obj, source=str(Path(path)))
