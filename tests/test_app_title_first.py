"""The order that keeps the main area from being blank (docs/never-silent.md): app.py draws the chosen page's
title before the work every page shares (the store, the selection, the sidebar), and every page file draws its
own title with ``opening.say`` before its own imports and work. Read from the code: the browser's timings are a
benchmark figure (``python -m htc_dev.bench coldstart --pages``), too noisy on shared machines for a test."""

from __future__ import annotations

import ast

import pytest

from conftest import REPO

APP = REPO / "app.py"


def _titles() -> dict[str, str]:
    """Page file -> the title app.py gives it (``st.Page(ui.PAGES["x"], title="...")``)."""
    out = {}
    for node in ast.walk(ast.parse(APP.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page" and node.args:
            key = node.args[0]
            title = next((k.value.value for k in node.keywords if k.arg == "title"), None)
            if isinstance(key, ast.Subscript) and isinstance(key.slice, ast.Constant) and title:
                out[key.slice.value] = title
    return out


def _statements(path) -> list[str]:
    return [ast.unparse(n) for n in ast.parse(path.read_text(encoding="utf-8")).body]


def test_app_draws_the_pages_title_before_the_shared_work():
    code = _statements(APP)
    title = next(i for i, s in enumerate(code) if "opening.title(nav.title)" in s)
    shared = next(i for i, s in enumerate(code) if "ui.bootstrap()" in s)
    assert title < shared


@pytest.mark.parametrize("page", sorted(_titles()))
def test_every_page_file_says_its_title_before_its_own_imports(page):
    path = REPO / "pages" / f"{page}.py"
    body = [s for s in _statements(path) if not s.startswith(("'", '"'))]     # the docstring aside
    say = next(i for i, s in enumerate(body) if s.startswith("opening.say("))
    assert body[say] == f"opening.say({_titles()[page]!r})", f"{path.name} says {body[say]}"
    before = body[:say]
    assert all(s.startswith(("import streamlit", "from htc_core.app import opening", "from __future__"))
               for s in before), f"{path.name} does this before its title: {before}"


def test_every_page_of_the_app_is_checked():
    assert len(_titles()) == len(list((REPO / "pages").glob("*.py"))) == 10
