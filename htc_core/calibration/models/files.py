"""Where the shipped model files are (a leaf module: no calibrator import, so the adaptation code can find a
shipped prior without an import cycle)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["SHIPPED", "model_path"]

# shipped name -> file name inside this package
SHIPPED = {"gac": "gac.json", "gac-full": "gac-full.json", "gac-prefix": "gac-prefix.json"}


def shipped_path(name: str) -> Path:
    """The path of a shipped model file by its short name (a key of ``SHIPPED``)."""
    return Path(str(resources.files(__package__).joinpath(SHIPPED[name])))


def model_path(model: str | Path) -> Path:
    """A shipped model's file for its name, else ``model`` as a path (a missing file raises ValueError).

    Parameters
    ----------
    model : str or path
        A shipped name (``gac``, ``gac-full``, ``gac-prefix``) or the path of a model file.

    Returns
    -------
    Path
        The model file (it exists; its content is not checked here).

    Raises
    ------
    ValueError
        If a shipped model is missing from the installation, or ``model`` is neither a shipped name nor an
        existing file.

    Examples
    --------
    >>> from htc_core.calibration.models.files import model_path
    >>> model_path("gac").name
    'gac.json'
    >>> model_path("no-such-model.json")
    Traceback (most recent call last):
    ...
    ValueError: model 'no-such-model.json' is neither a shipped model (gac, gac-full, gac-prefix) nor an existing file
    """
    if isinstance(model, str) and model in SHIPPED:
        path = shipped_path(model)
        if not path.is_file():
            raise ValueError(f"the shipped model {model!r} is missing from this installation ({path}); "
                             "regenerate it with: python -m htc_dev.train_gac")
        return path
    path = Path(model)
    if not path.is_file():
        raise ValueError(f"model {str(model)!r} is neither a shipped model ({', '.join(SHIPPED)}) nor an existing file")
    return path
