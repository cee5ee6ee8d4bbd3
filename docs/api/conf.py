"""Sphinx configuration of the API reference (built by tests/test_docs_api.py with warnings as errors).

Build by hand: ``python -m sphinx -W -b html docs/api docs/api/_build``.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

project = "HTC"
author = "the HTC developers"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_typehints = "none"              # the types are written in the numpydoc sections
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# every documented object must have a docstring, a summary, its parameters, what it returns and an example
numpydoc_validation_checks = {"GL08", "SS01", "PR01", "PR02", "RT01", "EX01"}


def skip_sklearn_request_methods(app, what, name, obj, skip, options):
    """scikit-learn generates ``set_fit_request`` / ``set_score_request`` on every estimator: its methods,
    documented by scikit-learn, not ours."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_sklearn_request_methods)
