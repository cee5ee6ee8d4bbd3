"""The models shipped inside the package (JSON model files with their model cards).

``gac`` (GAC-Reduced) and ``gac-full`` (GAC-Full): General Agent Calibrators pre-trained on every labeled
run the project has (``sample_runs/`` and the UALA HotpotQA runs), written by
``python -m htc_core.train_gac``. Each file's ``card`` says what it was trained on and how it
did zero-shot on each held-out dataset. ``gac-prefix``: a GAC-Reduced fitted on every prefix (first k steps)
of those runs, the live :class:`~htc_core.monitor.Monitor`'s default model, written by
``python -m htc_core.train_gac_prefix``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["SHIPPED", "DEFAULT_GAC", "DEFAULT_MONITOR", "ShippedModel", "shipped_models", "model_path", "load_model"]

#: shipped name -> file name inside this package
SHIPPED = {"gac": "gac.json", "gac-full": "gac-full.json", "gac-prefix": "gac-prefix.json"}
#: the model the dashboard scores unlabeled runs with
DEFAULT_GAC = "gac"
#: the model a live Monitor uses when none is given (trained on every prefix of every run)
DEFAULT_MONITOR = "gac-prefix"


@dataclass
class ShippedModel:
    name: str
    path: Path
    card: dict

    def to_dict(self) -> dict:
        return {"name": self.name, "path": str(self.path), "card": self.card}


def _file(name: str) -> Path:
    return Path(str(resources.files(__name__).joinpath(SHIPPED[name])))


def shipped_models() -> list[ShippedModel]:
    """Every shipped model present in this installation, with its card."""
    import json

    out = []
    for name in SHIPPED:
        path = _file(name)
        if path.is_file():
            card = json.loads(path.read_text(encoding="utf-8")).get("card") or {}
            out.append(ShippedModel(name, path, card))
    return out


def model_path(model: str | Path) -> Path:
    """A shipped model's file for its name, else ``model`` as a path (a missing file raises ValueError)."""
    if isinstance(model, str) and model in SHIPPED:
        path = _file(model)
        if not path.is_file():
            raise ValueError(f"the shipped model {model!r} is missing from this installation ({path}); "
                             "regenerate it with: python -m htc_core.train_gac")
        return path
    path = Path(model)
    if not path.is_file():
        raise ValueError(f"model {str(model)!r} is neither a shipped model ({', '.join(SHIPPED)}) nor an existing file")
    return path


def load_model(model: str | Path):
    """An HTCCalibrator or GeneralCalibrator from a shipped name (``gac``, ``gac-full``, ``gac-prefix``) or a JSON
    file."""
    from ..general import load_any_model

    return load_any_model(model_path(model))
