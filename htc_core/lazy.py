"""Package front doors that import a public name's module on first use (PEP 562 ``__getattr__``).

``import htc_core`` must stay light (no numeric library), yet ``htc.load`` or ``htc.calibration.evaluate``
should work as written; the three front doors (``htc_core``, ``htc_core.calibration``,
``htc_core.experiments``) map each public name to the module that defines it and resolve it here.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose public names load on first use.

    Parameters
    ----------
    package : str
        The package's dotted name (its ``__name__``).
    exports : dict of str to str
        Public name -> the module that defines it: a dotted path is absolute (``"htc_core.formats"``), a
        bare name is a module of the package (``"metrics"`` for ``<package>.metrics``).

    Returns
    -------
    getattr : callable
        ``__getattr__(name)``: imports the module, returns the name and stores it in the package's namespace
        (later lookups do not come here); an unknown name raises ``AttributeError`` listing the public names.
    dir : callable
        ``__dir__()``: the package's own names and the public ones.

    Examples
    --------
    >>> import sys, types
    >>> from htc_core.lazy import lazy_exports
    >>> pkg = types.ModuleType("demo_pkg"); sys.modules["demo_pkg"] = pkg
    >>> pkg.__getattr__, pkg.__dir__ = lazy_exports("demo_pkg", {"join": "os.path", "JSONDecoder": "json.decoder"})
    >>> pkg.join("runs", "a.jsonl")
    'runs/a.jsonl'
    >>> "join" in vars(pkg), "JSONDecoder" in dir(pkg)
    (True, True)
    >>> pkg.split
    Traceback (most recent call last):
    AttributeError: module 'demo_pkg' has no attribute 'split'; public names: join, JSONDecoder
    """

    def __getattr__(name: str) -> Any:
        path = exports.get(name)
        if path is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}; "
                                 f"public names: {', '.join(exports)}")
        value = getattr(importlib.import_module(path if "." in path else f"{package}.{path}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
