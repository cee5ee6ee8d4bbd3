"""The layout's rules, checked on the source: no import cycle inside htc_core (function-level imports
included), the core library imports no app library, no module or function grown past its size without a
reason written next to it, and a small lazy public API."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "htc_core"
APP_LIBRARIES = ("streamlit", "duckdb", "plotly", "umap")
#: the core: readers, trace set, features, calibration, explanation, recording (app/ and bench/ are not core)
CORE = ("htc_core", "htc_core.report", "htc_core.traces", "htc_core.formats", "htc_core.confidence",
        "htc_core.features", "htc_core.calibration", "htc_core.explain", "htc_core.collect",
        "htc_core.synthetic", "htc_core.cli")
MAX_MODULE_LINES = 400
MAX_COMPLEXITY = 15


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


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


def imported_modules(name: str, path: Path) -> set[str]:
    """Absolute names of the modules one module imports (``from pkg import sub`` counts as ``pkg.sub`` when
    ``sub`` is a module, else as ``pkg``)."""
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
    return out


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


def _in_core(name: str) -> bool:
    return any(name == c or (c != "htc_core" and name.startswith(c + ".")) for c in CORE)


def test_core_imports_no_app_library_statically():
    offenders = []
    for name, path in MODULES.items():
        if not _in_core(name):
            continue
        for mod in imported_modules(name, path):
            if mod.split(".")[0] in APP_LIBRARIES or mod.startswith(("htc_core.app", "htc_dev.bench")):
                offenders.append(f"{name} imports {mod}")
    assert not offenders, offenders


def test_core_imports_no_app_library_at_run_time():
    code = ("import sys, importlib\n"
            f"for m in {[m for m in MODULES if _in_core(m)]!r}:\n"
            "    importlib.import_module(m)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {APP_LIBRARIES!r}))")
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


def code_lines(src: str) -> int:
    """Lines of a module less its docstrings (module, class, function): documentation never counts against
    the size cap."""
    tree = ast.parse(src)
    doc = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                doc += first.end_lineno - first.lineno + 1
    return len(src.splitlines()) - doc


SOURCES = sorted(PKG.rglob("*.py")) + sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_size_and_function_complexity(path: Path):
    mccabe = pytest.importorskip("mccabe")
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    n_code = code_lines(src)
    if n_code > MAX_MODULE_LINES:
        head = "\n".join(lines[:40]).lower()
        assert "# size:" in head, (f"{path.name} has {n_code} lines besides docstrings (> {MAX_MODULE_LINES}): split "
                                   "it by job, or "
                                   "write the reason in a '# size: ...' comment near the top")
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(ast.parse(src, str(path)), visitor)
    too_complex = [f"{g.entity} (line {g.lineno}): {g.complexity()}" for g in visitor.graphs.values()
                   if g.complexity() > MAX_COMPLEXITY and not _reason_near(lines, g.lineno, "complexity")]
    assert not too_complex, (f"functions over complexity {MAX_COMPLEXITY} without a '# complexity: reason' "
                             f"comment in {path.name}: {too_complex}")
