"""Real tools for the recorded agent runs: calculator, unit converter, fact search, string sandbox.

Every tool takes the raw argument text the model wrote and returns an
observation string; a tool never raises (errors come back as observations,
as they would for a real agent).
"""

from __future__ import annotations

import ast
import math
import operator
import re

from .documents import lookup
from .snippets import code_tool

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 12:
            raise ValueError("exponent too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_arith(node.operand))
    raise ValueError(f"unsupported expression element {type(node).__name__}")


def format_number(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if isinstance(x, float):
        return f"{x:.4f}".rstrip("0").rstrip(".")
    return str(x)


def calculator(arg: str) -> str:
    """Evaluate an arithmetic expression (+ - * / // % ** and parentheses)."""
    expr = arg.strip().replace("×", "*").replace("x", "*").replace("^", "**").replace(",", "")
    try:
        return format_number(_arith(ast.parse(expr, mode="eval")))
    except ZeroDivisionError:
        return "Error: division by zero"
    except (SyntaxError, ValueError, TypeError, OverflowError) as e:
        return f"Error: cannot evaluate {arg.strip()!r} ({e.__class__.__name__})"


# unit -> (dimension, factor to the base unit)
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1.0), "km": ("length", 1000.0),
    "in": ("length", 0.0254), "ft": ("length", 0.3048), "yd": ("length", 0.9144), "mi": ("length", 1609.344),
    "g": ("mass", 0.001), "kg": ("mass", 1.0), "lb": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "ml": ("volume", 0.001), "l": ("volume", 1.0), "gal": ("volume", 3.785411784),
    "s": ("time", 1.0), "min": ("time", 60.0), "h": ("time", 3600.0), "day": ("time", 86400.0),
}
_ALIASES = {"meter": "m", "meters": "m", "metre": "m", "kilometers": "km", "kilometer": "km", "miles": "mi",
            "mile": "mi", "feet": "ft", "foot": "ft", "inches": "in", "inch": "in", "yards": "yd", "yard": "yd",
            "grams": "g", "gram": "g", "kilograms": "kg", "kilogram": "kg", "pounds": "lb", "pound": "lb",
            "ounces": "oz", "ounce": "oz", "liters": "l", "liter": "l", "litres": "l", "gallons": "gal",
            "gallon": "gal", "milliliters": "ml", "seconds": "s", "minutes": "min", "hours": "h", "hour": "h",
            "days": "day", "centimeters": "cm", "millimeters": "mm", "hr": "h", "sec": "s", "lbs": "lb"}


def _unit(u: str) -> str:
    u = u.strip().lower().rstrip(".")
    return _ALIASES.get(u, u)


def convert_units(value: float, src: str, dst: str) -> float:
    a, b = UNITS[_unit(src)], UNITS[_unit(dst)]
    if a[0] != b[0]:
        raise ValueError(f"cannot convert {a[0]} to {b[0]}")
    return value * a[1] / b[1]


def converter(arg: str) -> str:
    """'12 km to mi' -> the converted value (rounded to 2 decimals)."""
    m = re.match(r"\s*(-?[\d.]+)\s*([A-Za-z]+)\s+(?:to|in|->)\s+([A-Za-z]+)\s*$", arg)
    if not m:
        return "Error: use the form '<number> <unit> to <unit>', e.g. '3 km to m'"
    try:
        v = convert_units(float(m.group(1)), m.group(2), m.group(3))
    except KeyError as e:
        return f"Error: unknown unit {e.args[0]!r}; known: {', '.join(UNITS)}"
    except ValueError as e:
        return f"Error: {e}"
    return format_number(round(v, 2))


FACTS: dict[str, dict[str, str]] = {
    "France": {"capital": "Paris", "continent": "Europe", "currency": "euro", "language": "French"},
    "Germany": {"capital": "Berlin", "continent": "Europe", "currency": "euro", "language": "German"},
    "Italy": {"capital": "Rome", "continent": "Europe", "currency": "euro", "language": "Italian"},
    "Spain": {"capital": "Madrid", "continent": "Europe", "currency": "euro", "language": "Spanish"},
    "Portugal": {"capital": "Lisbon", "continent": "Europe", "currency": "euro", "language": "Portuguese"},
    "Poland": {"capital": "Warsaw", "continent": "Europe", "currency": "zloty", "language": "Polish"},
    "Sweden": {"capital": "Stockholm", "continent": "Europe", "currency": "krona", "language": "Swedish"},
    "Norway": {"capital": "Oslo", "continent": "Europe", "currency": "krone", "language": "Norwegian"},
    "Greece": {"capital": "Athens", "continent": "Europe", "currency": "euro", "language": "Greek"},
    "Hungary": {"capital": "Budapest", "continent": "Europe", "currency": "forint", "language": "Hungarian"},
    "Japan": {"capital": "Tokyo", "continent": "Asia", "currency": "yen", "language": "Japanese"},
    "China": {"capital": "Beijing", "continent": "Asia", "currency": "yuan", "language": "Chinese"},
    "India": {"capital": "New Delhi", "continent": "Asia", "currency": "rupee", "language": "Hindi"},
    "Thailand": {"capital": "Bangkok", "continent": "Asia", "currency": "baht", "language": "Thai"},
    "Vietnam": {"capital": "Hanoi", "continent": "Asia", "currency": "dong", "language": "Vietnamese"},
    "Turkey": {"capital": "Ankara", "continent": "Asia", "currency": "lira", "language": "Turkish"},
    "Egypt": {"capital": "Cairo", "continent": "Africa", "currency": "pound", "language": "Arabic"},
    "Kenya": {"capital": "Nairobi", "continent": "Africa", "currency": "shilling", "language": "Swahili"},
    "Nigeria": {"capital": "Abuja", "continent": "Africa", "currency": "naira", "language": "English"},
    "Morocco": {"capital": "Rabat", "continent": "Africa", "currency": "dirham", "language": "Arabic"},
    "Ghana": {"capital": "Accra", "continent": "Africa", "currency": "cedi", "language": "English"},
    "Brazil": {"capital": "Brasilia", "continent": "South America", "currency": "real", "language": "Portuguese"},
    "Argentina": {"capital": "Buenos Aires", "continent": "South America", "currency": "peso", "language": "Spanish"},
    "Peru": {"capital": "Lima", "continent": "South America", "currency": "sol", "language": "Spanish"},
    "Chile": {"capital": "Santiago", "continent": "South America", "currency": "peso", "language": "Spanish"},
    "Colombia": {"capital": "Bogota", "continent": "South America", "currency": "peso", "language": "Spanish"},
    "Canada": {"capital": "Ottawa", "continent": "North America", "currency": "dollar", "language": "English"},
    "Mexico": {"capital": "Mexico City", "continent": "North America", "currency": "peso", "language": "Spanish"},
    "Cuba": {"capital": "Havana", "continent": "North America", "currency": "peso", "language": "Spanish"},
    "Australia": {"capital": "Canberra", "continent": "Oceania", "currency": "dollar", "language": "English"},
    "New Zealand": {"capital": "Wellington", "continent": "Oceania", "currency": "dollar", "language": "English"},
    "Iran": {"capital": "Tehran", "continent": "Asia", "currency": "rial", "language": "Persian"},
    "Austria": {"capital": "Vienna", "continent": "Europe", "currency": "euro", "language": "German"},
    "Finland": {"capital": "Helsinki", "continent": "Europe", "currency": "euro", "language": "Finnish"},
    "Ireland": {"capital": "Dublin", "continent": "Europe", "currency": "euro", "language": "English"},
    "Denmark": {"capital": "Copenhagen", "continent": "Europe", "currency": "krone", "language": "Danish"},
}


def search(arg: str) -> str:
    """Keyword search over the bundled fact table: returns the matching row(s)."""
    words = [w for w in re.findall(r"[A-Za-z]+", arg.lower()) if len(w) > 2]
    if not words:
        return "Error: give a keyword, e.g. search[France]"
    hits = []
    for country, facts in FACTS.items():
        text = (country + " " + " ".join(facts.values())).lower()
        score = sum(1 for w in words if w in text.split() or w in country.lower().split())
        if score:
            hits.append((score, country))
    if not hits:
        return f"No entry found for {arg.strip()!r}."
    hits.sort(key=lambda h: (-h[0], h[1]))
    rows = []
    for _, c in hits[:2]:
        f = FACTS[c]
        rows.append(f"{c}: capital {f['capital']}; continent {f['continent']}; currency {f['currency']}; "
                    f"language {f['language']}.")
    return " ".join(rows)


_STR_FUNCS = {"len": len, "upper": str.upper, "lower": str.lower, "reverse": lambda s: s[::-1],
              "count": lambda s, c: s.count(c), "first": lambda s: s[:1], "last": lambda s: s[-1:],
              "sorted": lambda s: "".join(sorted(s))}


def _py(node: ast.AST):
    if isinstance(node, ast.Expression):
        return _py(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
        if isinstance(node.value, str) and len(node.value) > 200:
            raise ValueError("string too long")
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _STR_FUNCS and not node.keywords:
        return _STR_FUNCS[node.func.id](*[_py(a) for a in node.args])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        return _BINOPS[type(node.op)](_py(node.left), _py(node.right))
    if isinstance(node, ast.Subscript):
        v = _py(node.value)
        if isinstance(node.slice, ast.Slice):
            sl = node.slice
            return v[slice(*(None if x is None else _py(x) for x in (sl.lower, sl.upper, sl.step)))]
        return v[_py(node.slice)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_py(node.operand)
    raise ValueError(f"not allowed: {type(node).__name__}")


def python_sandbox(arg: str) -> str:
    """A restricted Python expression evaluator for strings: len, upper, lower, reverse, count, slicing."""
    try:
        out = _py(ast.parse(arg.strip(), mode="eval"))
    except Exception as e:  # the sandbox answers with an error observation, as a real tool would
        return f"Error: {e.__class__.__name__}: {e}"
    if isinstance(out, str) and len(out) > 200:
        out = out[:200]
    return str(out)


TOOLS = {"calculator": calculator, "convert": converter, "search": search, "python": python_sandbox,
         "lookup": lookup, "code": code_tool}


def run_tool(name: str, arg: str) -> str:
    fn = TOOLS.get(name.strip().lower())
    if fn is None:
        return f"Error: unknown tool {name!r}; tools: {', '.join(TOOLS)}"
    return fn(arg)


__all__ = ["TOOLS", "run_tool", "lookup", "code_tool", "calculator", "converter", "search", "python_sandbox", "FACTS", "UNITS",
           "format_number", "convert_units", "math"]
