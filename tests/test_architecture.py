"""The layout's rules (docs/house.md), checked on the source: the rooms import only the rooms below them, no
import cycle (function-level imports included), the core imports no app library, no underscore name crosses a
module, no function grown past its complexity without a reason written next to it, and a small lazy public
API."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "htc_core"
DEV = ROOT / "htc_dev"
APP_LIBRARIES = ("streamlit", "duckdb", "plotly", "umap")
#: the rooms above the core (htc_core.<room>); every other module of htc_core is the core (readers, trace
#: set, features, calibration, explanation, recording, monitor, engines), and htc_dev is the repository-only
#: room (benchmarks, demo agent, GAC training) that nothing in htc_core imports
ROOMS = ("experiments", "viz", "htmlreport", "app", "cli")
#: room -> the rooms it may import (itself included); the package's front door ``htc_core`` (a lazy map of
#: names, by module path strings) and ``htc_core.__main__`` (the ``python -m htc_core`` entry, in ``cli``)
ALLOWED = {
    "core": {"core"},
    "experiments": {"core", "experiments"},
    "viz": {"core", "experiments", "viz"},
    "htmlreport": {"core", "experiments", "viz", "htmlreport"},
    "app": {"core", "experiments", "viz", "htmlreport", "app"},
    "cli": {"core", "experiments", "viz", "htmlreport", "app", "cli"},
    "dev": {"core", "experiments", "viz", "htmlreport", "app", "cli", "dev"},
}
MAX_COMPLEXITY = 15


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py")) + sorted(DEV.rglob("*.py"))}


def room(name: str) -> str:
    """The room of a module: ``dev`` (htc_dev), one of :data:`ROOMS`, or ``core``."""
    parts = name.split(".")
    if parts[0] == "htc_dev":
        return "dev"
    if name == "htc_core.__main__":
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else "core"


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement anywhere in the tree (functions included), except under ``if TYPE_CHECKING``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=None)
def imported_modules(name: str, path: Path) -> frozenset[str]:
    """Absolute names of the modules one module imports (``from pkg import sub`` counts as ``pkg.sub`` when
    ``sub`` is a module, else as ``pkg``). Read once per session (three checks ask; the names are kept, not
    the syntax trees, which slowed the garbage collector of the whole test session when kept alive)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            out.add(sub if sub in MODULES else target)
    return frozenset(out)


def import_graph() -> dict[str, set[str]]:
    return {name: {m for m in imported_modules(name, path) if m in MODULES and m != name}
            for name, path in MODULES.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components with more than one module are cycles."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def test_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_htc_core():
    cycles = strongly_connected(import_graph())
    assert not cycles, "import cycles (function-level imports included): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_room_finder():
    assert room("htc_core.calibration.metrics") == "core" and room("htc_core") == "core"
    assert room("htc_core.experiments.transfer") == "experiments" and room("htc_core.viz") == "viz"
    assert room("htc_core.cli.serve") == "cli" and room("htc_dev.bench.gam") == "dev"


def test_rooms_import_only_the_rooms_below():
    """core <- experiments <- viz <- htmlreport <- app <- cli, htc_dev on the side (function-level imports
    included): the core never imports an experiment, a figure, the app, the command line or htc_dev."""
    graph = import_graph()
    offenders = [f"{a} ({room(a)}) imports {b} ({room(b)})" for a, targets in sorted(graph.items())
                 for b in sorted(targets) if room(b) not in ALLOWED[room(a)]]
    assert not offenders, offenders


def _in_core(name: str) -> bool:
    return name.startswith("htc_core") and room(name) == "core"


def test_core_imports_no_app_library_statically():
    offenders = []
    for name, path in MODULES.items():
        if not _in_core(name):
            continue
        for mod in imported_modules(name, path):
            if mod.split(".")[0] in APP_LIBRARIES or mod.startswith(("htc_core.app", "htc_dev.bench")):
                offenders.append(f"{name} imports {mod}")
    assert not offenders, offenders


def test_core_and_cli_import_no_app_library_at_run_time():
    """Importing any core module, or the command line (whose commands load the app's modules inside the
    function that runs), loads none of streamlit, duckdb, plotly, umap, nor a module of ``htc_core.app``.
    One process for every module (the explain and calibration packages included: their own tests no longer
    start one each for the same check)."""
    light = [m for m in MODULES if (_in_core(m) or room(m) == "cli") and not m.endswith("__main__")]
    code = ("import sys, importlib\n"
            f"for m in {light!r}:\n"
            "    importlib.import_module(m)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {APP_LIBRARIES!r} "
            "or m.startswith('htc_core.app')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_import_htc_core_is_light_and_lazy():
    code = ("import sys, htc_core\n"
            "heavy = [m for m in ('numpy', 'pandas', 'sklearn', 'numba') if m in sys.modules]\n"
            "print(heavy)\n"
            "assert callable(htc_core.load) and callable(htc_core.extract) and callable(htc_core.evaluate)\n"
            "assert htc_core.HTCCalibrator.__name__ == 'HTCCalibrator'\n"
            "assert callable(htc_core.expected_calibration_error)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves():
    import htc_core

    for name in htc_core.__all__:
        assert getattr(htc_core, name) is not None, name
    with pytest.raises(AttributeError, match="public names"):
        htc_core.no_such_name  # noqa: B018


def _reason_near(lines: list[str], lineno: int, word: str) -> bool:
    """A comment naming ``word`` on the def line, the line above it or in the first lines of the body."""
    window = lines[max(0, lineno - 2): lineno + 2]
    return any("#" in ln and word in ln.split("#", 1)[1].lower() for ln in window)


def _target(name: str, path: Path, node: ast.ImportFrom) -> str:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")
    return ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def private_imports(name: str, path: Path) -> list[str]:
    """Underscore names this module takes from another project module: ``from x import _y`` and ``x._y``
    where ``x`` is a project module bound by an import (dunders such as ``__version__`` excepted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out, bound = [], {}
    for node in _imports(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(name, path, node)
            if target.split(".")[0] not in ("htc_core", "htc_dev"):
                continue
            for alias in node.names:
                if _private(alias.name) and target != name:
                    out.append(f"{name}:{node.lineno} from {target} import {alias.name}")
                if f"{target}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
        else:
            for alias in node.names:
                if alias.name.split(".")[0] in ("htc_core", "htc_dev"):
                    bound[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id], *reversed(chain[1:])])
                if owner != name and (owner in MODULES or bound[value.id] != name):
                    out.append(f"{name}:{node.lineno} {owner}.{node.attr}")
    return out


def test_private_import_finder(tmp_path):
    mod = PKG / "calibration" / "metrics.py"
    src = tmp_path / "m.py"
    src.write_text("from htc_core.calibration.metrics import _fast_ece, __doc__\n"
                   "from htc_core.calibration import metrics\nimport htc_core.calibration.metrics as mm\n"
                   "metrics._bin(1)\nmm._edges\nmetrics.bin_predictions\n", encoding="utf-8")
    found = private_imports("htc_core.app.fake", src)
    assert sorted(f.split(" ", 1)[1] for f in found) == ["from htc_core.calibration.metrics import _fast_ece",
                                                   "htc_core.calibration.metrics._bin",
                                                   "htc_core.calibration.metrics._edges"]
    assert private_imports("htc_core.calibration.metrics", mod) == []


def test_no_underscore_name_crosses_a_module():
    """One module per concept: a helper another module needs is public (with a docstring) in its module,
    or the two modules are one concept and one module."""
    offenders = [hit for name, path in MODULES.items() for hit in private_imports(name, path)]
    assert not offenders, f"{len(offenders)} underscore names imported across modules: {offenders}"


SOURCES = sorted(PKG.rglob("*.py")) + sorted(DEV.rglob("*.py")) + sorted((ROOT / "pages").glob("*.py")) + \
    [ROOT / "app.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_function_complexity(path: Path):
    mccabe = pytest.importorskip("mccabe")
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(ast.parse(src, str(path)), visitor)
    too_complex = [f"{g.entity} (line {g.lineno}): {g.complexity()}" for g in visitor.graphs.values()
                   if g.complexity() > MAX_COMPLEXITY and not _reason_near(lines, g.lineno, "complexity")]
    assert not too_complex, (f"functions over complexity {MAX_COMPLEXITY} without a '# complexity: reason' "
                             f"comment in {path.name}: {too_complex}")
