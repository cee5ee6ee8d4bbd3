"""A sandboxed interpreter for short Python snippets over lists of numbers (the ``lists`` family's tool).

``code[xs = [4, 9, 2]; sorted(xs)[1]]`` runs the statements in order and
returns the value of the last expression. Only a small, safe subset of Python
is interpreted (nothing is passed to ``eval``/``exec``): number and list
literals, names assigned in the snippet, + - * / // % and small powers,
indexing and slicing, and the functions ``sum, max, min, sorted, len, abs,
round, reversed``. Anything else comes back as an ``Error: ...`` observation,
as a real tool would answer; the tool never raises.
"""

from __future__ import annotations

import ast
import operator

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"sum": sum, "max": max, "min": min, "sorted": sorted, "len": len, "abs": abs, "round": round,
          "reversed": lambda xs: list(reversed(xs))}
MAX_ITEMS = 1000
MAX_STATEMENTS = 8


class SnippetError(ValueError):
    """A construct outside the sandbox's subset, or a value too large."""


def _check_size(v):
    if isinstance(v, list) and len(v) > MAX_ITEMS:
        raise SnippetError("list too long")
    if isinstance(v, (int, float)) and abs(v) > 1e15:
        raise SnippetError("number too large")
    return v


def _binop(node: ast.BinOp, env: dict):
    left, right = _value(node.left, env), _value(node.right, env)
    if isinstance(node.op, ast.Pow) and (not isinstance(right, (int, float)) or abs(right) > 12):
        raise SnippetError("exponent too large")
    if isinstance(node.op, ast.Mult) and (isinstance(left, list) or isinstance(right, list)):
        raise SnippetError("list repetition is not allowed")
    return _BINOPS[type(node.op)](left, right)


def _call(node: ast.Call, env: dict):
    if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS) or node.keywords:
        raise SnippetError(f"only {', '.join(_FUNCS)} can be called")
    return _FUNCS[node.func.id](*[_value(a, env) for a in node.args])


def _subscript(node: ast.Subscript, env: dict):
    v = _value(node.value, env)
    if isinstance(node.slice, ast.Slice):
        s = node.slice
        return v[slice(*(None if x is None else _value(x, env) for x in (s.lower, s.upper, s.step)))]
    return v[_value(node.slice, env)]


def _value(node: ast.AST, env: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return _check_size([_value(e, env) for e in node.elts])
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise SnippetError(f"name {node.id!r} is not defined")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _check_size(_binop(node, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.Call):
        return _check_size(_call(node, env))
    if isinstance(node, ast.Subscript):
        return _subscript(node, env)
    raise SnippetError(f"not allowed: {type(node).__name__}")


def run_snippet(code: str):
    """Interpret ``code`` (statements separated by newlines or ';'); the value of the last expression."""
    tree = ast.parse(code.strip(), mode="exec")
    if not tree.body:
        raise SnippetError("empty snippet")
    if len(tree.body) > MAX_STATEMENTS:
        raise SnippetError(f"at most {MAX_STATEMENTS} statements")
    env: dict = {}
    result = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = _value(stmt.value, env)
            result = None
        elif isinstance(stmt, ast.Expr):
            result = _value(stmt.value, env)
        else:
            raise SnippetError(f"not allowed: {type(stmt).__name__}")
    if result is None:
        raise SnippetError("the snippet must end with an expression")
    return result


def code_tool(arg: str) -> str:
    """The ``code[...]`` tool: the snippet's result as text, or ``Error: ...``."""
    try:
        out = run_snippet(arg)
    except Exception as e:  # the sandbox answers with an error observation, as a real tool would
        return f"Error: {e.__class__.__name__}: {e}"
    if isinstance(out, float):
        out = round(out, 4)
        return str(int(out)) if out.is_integer() else f"{out:.4f}".rstrip("0").rstrip(".")
    return str(out)[:200]


__all__ = ["run_snippet", "code_tool", "SnippetError", "MAX_ITEMS", "MAX_STATEMENTS"]
