"""Every public object of the library rooms (core, experiments, viz, htmlreport: docs/house.md) has a numpydoc
docstring with an example that runs.

"Public" is what a module declares in ``__all__`` (PEP 8); a module-level name outside ``__all__`` is
internal, even without a leading underscore (the architecture test forbids underscore names across modules,
so helpers two modules share are plain names kept out of ``__all__``). Every library module declares
``__all__``. The numpydoc checks are the ones the API reference's Sphinx build enforces (docs/api/conf.py):
a docstring (GL08), a one-line summary (SS01), every parameter documented (PR01) and no unknown one (PR02),
a Returns section (RT01) and an Examples section (EX01). The examples run as doctests from the repository
root, as a reader of the docs would run them.

The app (Streamlit, DuckDB) and the cli are not library rooms: the dashboard and ``htc --help`` document them.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "htc_core"
NOT_LIBRARY = ("app", "cli")                     # rooms with their own documentation (docs/house.md)
CHECKS = {"GL08", "SS01", "PR01", "PR02", "RT01", "EX01"}   # = numpydoc_validation_checks in docs/api/conf.py


def library_modules() -> list[str]:
    """The dotted names of the library rooms' modules and packages (``__main__`` excepted)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if rel.parts[1] in NOT_LIBRARY or rel.name in ("__main__", "_version"):
            continue
        names.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return names


def is_routine_or_class(obj) -> bool:
    """A function, a class or a numba-compiled function (its ``py_func`` is the Python one)."""
    return inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isfunction(getattr(obj, "py_func", None))


def defined_in(obj, module_name: str) -> bool:
    return getattr(obj, "__module__", None) == module_name or \
        getattr(getattr(obj, "py_func", None), "__module__", None) == module_name


def public_methods(cls) -> list[str]:
    """The public methods and properties a class defines itself (scikit-learn's generated
    ``set_*_request`` methods are scikit-learn's, and skipped by the reference too: docs/api/conf.py)."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") or (name.startswith("set_") and name.endswith("_request")):
            continue
        if inspect.isfunction(member) or isinstance(member, (property, classmethod, staticmethod)):
            out.append(name)
    return out


def public_objects(module_name: str) -> list[str]:
    """The functions, classes and the classes' public methods a module declares public in ``__all__`` and
    defines itself (re-exports are documented where they are defined)."""
    module = importlib.import_module(module_name)
    out = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if is_routine_or_class(obj) and defined_in(obj, module_name):
            out.append(f"{module_name}.{name}")
            if inspect.isclass(obj):
                out.extend(f"{module_name}.{name}.{m}" for m in public_methods(obj))
    return out


MODULES = library_modules()


def resolve(dotted: str):
    """The object of a dotted name from :func:`public_objects` and the module that defines it."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        obj = module
        for attr in parts[cut:]:
            obj = inspect.getattr_static(obj, attr) if inspect.isclass(obj) else getattr(obj, attr)
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            obj = obj.fget
        return obj, module
    raise ImportError(dotted)


@pytest.mark.parametrize("module_name", MODULES)
def test_every_library_module_declares_its_public_names(module_name):
    module = importlib.import_module(module_name)
    assert hasattr(module, "__all__"), f"{module_name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{module_name}.__all__ names what the module does not have: {missing}"


@pytest.mark.docs
@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_object_has_a_numpydoc_docstring(module_name):
    numpydoc_validate = pytest.importorskip("numpydoc.validate", reason="the docs extra: pip install -e '.[docs]'")
    problems = []
    for dotted in public_objects(module_name):
        for code, message in numpydoc_validate.validate(dotted)["errors"]:
            if code in CHECKS:
                problems.append(f"{dotted}: {code} {message}")
    assert not problems, "\n".join(problems)


@pytest.mark.docs
@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_example_runs(module_name, monkeypatch):
    monkeypatch.chdir(ROOT)                       # examples read sample_runs/ as a reader of the docs would
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for dotted in public_objects(module_name):
        obj, module = resolve(dotted)
        tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, dotted, module=module, globs={})
                 if t.examples]
        assert tests, f"{dotted} has no example"
        for test in tests:
            runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
