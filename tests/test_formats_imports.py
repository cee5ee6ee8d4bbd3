"""The readers package's layering, checked on the source: no import cycle inside htc_core.formats (imports
inside functions included), no reader importing the package itself, and data flowing one way (formats imports
only htc_core.report and htc_core.traces from the rest of htc_core)."""

from __future__ import annotations

import ast
from pathlib import Path

import htc_core.formats

PKG = Path(htc_core.formats.__file__).parent
PACKAGE = "htc_core.formats"
#: the parts of htc_core below the readers
ALLOWED_OUTSIDE = {"htc_core.report", "htc_core.traces", "htc_core.atomic", "htc_core.scratch",
                   "htc_core.jsonvalues"}  # stdlib-only helpers
#: third-party imports the readers may use (pandas: labels joins into the trace set's metadata frame; pyarrow, a
#: core dependency: Phoenix spans exports saved as Parquet, imported only when such a file is read)
#: opentelemetry-proto (and the protobuf runtime it brings): the optional 'otel' extra, imported only to decode a
#: protobuf OTLP request (otlp_wire)
ALLOWED_THIRD_PARTY = {"numpy", "orjson", "simdjson", "pandas", "pyarrow", "opentelemetry", "google"}


def module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


MODULES = {module_name(p): p for p in sorted(PKG.glob("*.py"))}


def imports(name: str, path: Path) -> set[str]:
    """Absolute names of every module ``name`` imports, at module level or inside functions."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in MODULES else target)
    return out


def graph() -> dict[str, set[str]]:
    return {name: {m for m in imports(name, path) if m in MODULES and m != name} for name, path in MODULES.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``g``: for each module, a path back to itself when there is one."""
    found = []
    for start in g:
        stack = [(start, [start])]
        seen = set()
        while stack:
            node, path = stack.pop()
            for nxt in g[node]:
                if nxt == start:
                    found.append(path + [start])
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, path + [nxt]))
    return found


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"], ["b", "a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_formats():
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_reader_imports_the_package():
    offenders = [name for name, path in MODULES.items() if name != PACKAGE and PACKAGE in imports(name, path)]
    assert not offenders, offenders


def test_formats_imports_only_lower_layers():
    offenders = []
    for name, path in MODULES.items():
        for mod in imports(name, path):
            top = mod.split(".")[0]
            if mod in MODULES or mod == "__future__":
                continue
            if top == "htc_core":
                if mod not in ALLOWED_OUTSIDE:
                    offenders.append(f"{name} imports {mod}")
            elif top not in ALLOWED_THIRD_PARTY and top not in _stdlib():
                offenders.append(f"{name} imports {mod}")
    assert not offenders, offenders


def _stdlib() -> frozenset[str]:
    import sys

    return frozenset(sys.stdlib_module_names)
