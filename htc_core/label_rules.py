"""Label rules: derive success labels from the runs' own fields (answer vs gold, or a metadata field).

A rule never labels a run that lacks what it needs: :func:`apply_rule` returns 1.0 (success), 0.0 (failure) or
NaN (no label) per run, and :func:`preview` counts both outcomes, the runs left unlabeled by reason, and shows a
sample of each outcome before anything is written (the dashboard writes rule labels with source ``rule``).

Answer rules (:class:`AnswerRule`, ``kind``), each needing a non-empty ``gold`` and an ``answer`` (not null):

- ``exact``: the answer equals the gold (surrounding blanks ignored);
- ``normalized``: equal after lower-casing, dropping punctuation, the articles a/an/the and extra blanks
  (the usual open-QA normalization);
- ``numeric``: the first number of the answer is within ``abs_tol + rel_tol * |gold|`` of the gold's number
  (thousands separators allowed; a gold without a number: no label; an answer without one: failure);
- ``contains``: the normalized gold occurs in the normalized answer;
- ``regex``: the gold is a regular expression searched in the answer (``pattern``, when given, is used
  instead, with ``{gold}`` replaced by the escaped gold); a gold that is no valid expression: no label;
- ``choice``: the multiple-choice letter of the answer (``B``, ``(b)``, ``B.``, ``answer: B``) equals the gold's
  (a gold without a letter: no label; an answer without one: failure).

Field rules (:class:`FieldRule`): a metadata field (``reward``, ``passed``, ``score``, ...) compared with ``op``:
``truthy`` (true/false, 1/0, yes/no, pass/fail), or ``>=``, ``>``, ``<=``, ``<``, ``==`` against ``threshold``. A run
without the field, or whose value is not a number (not a boolean for ``truthy``): no label.
"""

from __future__ import annotations

import json
import math
import re
import string
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["AnswerRule", "FieldRule", "apply_rule", "preview", "RulePreview", "ANSWER_KINDS", "FIELD_OPS",
           "normalize_text"]

ANSWER_KINDS = ("exact", "normalized", "numeric", "contains", "regex", "choice")
FIELD_OPS = ("truthy", ">=", ">", "<=", "<", "==")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_CHOICE = re.compile(r"^\s*(?:the\s+)?(?:answer|option|choice)?\s*(?:is)?\s*[:\-]?\s*\(?([A-Za-z])\)?(?=$|[\s.):,])",
                     re.IGNORECASE)
_TRUE = {"true", "t", "yes", "y", "1", "1.0", "pass", "passed", "success", "correct"}
_FALSE = {"false", "f", "no", "n", "0", "0.0", "fail", "failed", "failure", "incorrect", "wrong"}


def normalize_text(s: str) -> str:
    """Lower case, no punctuation, no articles, single blanks (the usual open-QA normalization).

    Parameters
    ----------
    s : str
        The text (any value is converted with ``str``).

    Returns
    -------
    str

    Examples
    --------
    >>> from htc_core.label_rules import normalize_text
    >>> normalize_text("  The Eiffel   Tower! ")
    'eiffel tower'
    """
    s = str(s).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _number(s: str) -> float | None:
    m = _NUMBER.search(str(s))
    if m is None:
        return None
    try:
        v = float(m.group(0).replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _letter(s: str) -> str | None:
    m = _CHOICE.match(str(s))
    return m.group(1).upper() if m else None


@dataclass(frozen=True)
class AnswerRule:
    """Compare each run's answer with its gold.

    Each kind needs a non-empty ``gold`` and an ``answer`` (not null); a run without them gets no label.

    Parameters
    ----------
    kind : {"exact", "normalized", "numeric", "contains", "regex", "choice"}, default "normalized"
        ``exact``: equal (surrounding blanks ignored); ``normalized``: equal after :func:`normalize_text`;
        ``numeric``: the answer's first number within ``abs_tol + rel_tol * |gold|`` of the gold's (a gold
        without a number: no label, an answer without one: failure); ``contains``: the normalized gold occurs
        in the normalized answer; ``regex``: the gold (or ``pattern``) is searched in the answer as a regular
        expression; ``choice``: the multiple-choice letters (``B``, ``(b)``, ``answer: B``) are equal.
    abs_tol : float, default 0.0
        Absolute tolerance of ``numeric`` (>= 0).
    rel_tol : float, default 0.0
        Relative tolerance of ``numeric`` (>= 0).
    pattern : str, optional
        For ``regex``: the expression searched instead of the gold, with ``{gold}`` replaced by the escaped
        gold.

    Examples
    --------
    >>> from htc_core.label_rules import AnswerRule
    >>> rule = AnswerRule("numeric", rel_tol=0.01)
    >>> rule.judge("about 5.02 meters", "5.03")
    (1.0, None)
    >>> rule.judge("5.03", "")
    (nan, 'no gold')
    """

    kind: str = "normalized"
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    pattern: str | None = None

    def __post_init__(self):
        if self.kind not in ANSWER_KINDS:
            raise ValueError(f"kind must be one of {', '.join(ANSWER_KINDS)}, got {self.kind!r}")
        for name in ("abs_tol", "rel_tol"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.pattern is not None:
            try:
                re.compile(self.pattern.replace("{gold}", "x"))
            except re.error as e:
                raise ValueError(f"pattern is not a valid regular expression: {e}") from None

    @property
    def needs(self) -> tuple[str, ...]:
        """The run fields the rule reads.

        Returns
        -------
        tuple of str

        Examples
        --------
        >>> from htc_core.label_rules import AnswerRule
        >>> AnswerRule().needs
        ('answer', 'gold')
        """
        return ("answer", "gold")

    def describe(self) -> str:
        """The rule in words (shown in the dashboard and stored with the labels it writes).

        Returns
        -------
        str

        Examples
        --------
        >>> from htc_core.label_rules import AnswerRule
        >>> AnswerRule("numeric", abs_tol=0.5).describe()
        'answer vs gold: numeric (within 0.5 + 0 x |gold|)'
        """
        extra = {"numeric": f" (within {self.abs_tol:g} + {self.rel_tol:g} x |gold|)",
                 "regex": f" ({self.pattern!r})" if self.pattern else " (the gold as a regular expression)"}
        return f"answer vs gold: {self.kind}{extra.get(self.kind, '')}"

    def judge(self, answer, gold) -> tuple[float, str | None]:
        """The label of one run.

        Parameters
        ----------
        answer : str or None
            The run's final answer.
        gold : str or None
            The expected answer.

        Returns
        -------
        label : float
            1.0 (success), 0.0 (failure) or NaN (no label).
        reason : str or None
            Why there is no label; None when there is one.

        Examples
        --------
        >>> from htc_core.label_rules import AnswerRule
        >>> AnswerRule("choice").judge("The answer is (b).", "B")
        (1.0, None)
        >>> AnswerRule("normalized").judge(None, "Paris")
        (nan, 'no answer')
        """
        if answer is None or (isinstance(answer, float) and math.isnan(answer)):
            return math.nan, "no answer"
        if gold is None or (isinstance(gold, float) and math.isnan(gold)) or not str(gold).strip():
            return math.nan, "no gold"
        a, g = str(answer), str(gold)
        k = self.kind
        if k == "exact":
            return float(a.strip() == g.strip()), None
        if k == "normalized":
            return float(normalize_text(a) == normalize_text(g)), None
        if k == "contains":
            ng = normalize_text(g)
            return (float(ng in normalize_text(a)), None) if ng else (math.nan, "gold empty after normalization")
        if k == "numeric":
            gv = _number(g)
            if gv is None:
                return math.nan, "gold is not a number"
            av = _number(a)
            return float(av is not None and abs(av - gv) <= self.abs_tol + self.rel_tol * abs(gv)), None
        if k == "choice":
            gl = _letter(g)
            if gl is None:
                return math.nan, "gold is not a choice letter"
            return float(_letter(a) == gl), None
        return self._regex(a, g)

    def _regex(self, a: str, g: str) -> tuple[float, str | None]:
        expr = self.pattern.replace("{gold}", re.escape(g)) if self.pattern else g
        try:
            return float(re.search(expr, a) is not None), None
        except re.error:
            return math.nan, "gold is not a valid regular expression"


def _parse_bool(v) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    return None


def _parse_number(v) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            x = float(v.strip())
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


@dataclass(frozen=True)
class FieldRule:
    """Label from one metadata field (``reward``, ``passed``, ``score``, ...).

    A run without the field, or whose value is not a number (not a boolean for ``truthy``), gets no label.

    Parameters
    ----------
    field : str
        The metadata key.
    op : {"truthy", ">=", ">", "<=", "<", "=="}, default "truthy"
        ``truthy``: true/false, 1/0, yes/no, pass/fail; the others compare the value with ``threshold``.
    threshold : float, default 0.0
        The value compared with.

    Examples
    --------
    >>> from htc_core.label_rules import FieldRule
    >>> FieldRule("reward", ">=", 0.5).judge({"reward": "0.75"})
    (1.0, None)
    >>> FieldRule("passed").judge({"passed": "maybe"})
    (nan, 'passed is not true/false')
    """

    field: str
    op: str = "truthy"
    threshold: float = 0.0

    def __post_init__(self):
        if not isinstance(self.field, str) or not self.field.strip():
            raise ValueError(f"field must be a non-empty string, got {self.field!r}")
        if self.op not in FIELD_OPS:
            raise ValueError(f"op must be one of {', '.join(FIELD_OPS)}, got {self.op!r}")
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"threshold must be a finite number, got {t!r}")

    @property
    def needs(self) -> tuple[str, ...]:
        """The run fields the rule reads (``metadata.<field>``).

        Returns
        -------
        tuple of str

        Examples
        --------
        >>> from htc_core.label_rules import FieldRule
        >>> FieldRule("passed").needs
        ('metadata.passed',)
        """
        return ("metadata." + self.field,)

    def describe(self) -> str:
        """The rule in words (shown in the dashboard and stored with the labels it writes).

        Returns
        -------
        str

        Examples
        --------
        >>> from htc_core.label_rules import FieldRule
        >>> FieldRule("score", ">", 0.8).describe()
        'metadata score > 0.8'
        """
        return f"metadata {self.field}" + ("" if self.op == "truthy" else f" {self.op} {self.threshold:g}")

    def judge(self, md: dict) -> tuple[float, str | None]:
        """The label of one run from its metadata.

        Parameters
        ----------
        md : dict
            The run's metadata.

        Returns
        -------
        label : float
            1.0 (success), 0.0 (failure) or NaN (no label).
        reason : str or None
            Why there is no label; None when there is one.

        Examples
        --------
        >>> from htc_core.label_rules import FieldRule
        >>> FieldRule("passed").judge({"passed": "yes"})
        (1.0, None)
        >>> FieldRule("passed").judge({})
        (nan, 'no passed')
        """
        if self.field not in md or md[self.field] is None:
            return math.nan, f"no {self.field}"
        v = md[self.field]
        if self.op == "truthy":
            b = _parse_bool(v)
            return (math.nan, f"{self.field} is not true/false") if b is None else (float(b), None)
        x = _parse_number(v)
        if x is None:
            return math.nan, f"{self.field} is not a number"
        t = self.threshold
        ok = {">=": x >= t, ">": x > t, "<=": x <= t, "<": x < t, "==": x == t}[self.op]
        return float(ok), None


def _metadata(text) -> dict:
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text:
        return {}
    try:
        md = json.loads(text)
    except ValueError:
        return {}
    return md if isinstance(md, dict) else {}


def judge_all(rule, meta: pd.DataFrame) -> tuple[np.ndarray, list]:
    """(labels 1/0/NaN, reasons: None or why no label) for every row of ``meta`` (the runs' metadata table)."""
    if isinstance(rule, AnswerRule):
        for c in ("answer", "gold"):
            if c not in meta.columns:
                return np.full(len(meta), np.nan), [f"no {c} column"] * len(meta)
        pairs = [rule.judge(a, g) for a, g in zip(meta["answer"].tolist(), meta["gold"].tolist())]
    elif isinstance(rule, FieldRule):
        mds = meta["metadata"].tolist() if "metadata" in meta.columns else [None] * len(meta)
        pairs = [rule.judge(_metadata(m)) for m in mds]
    else:
        raise ValueError(f"rule must be an AnswerRule or a FieldRule, got {type(rule).__name__}")
    return np.array([p[0] for p in pairs], dtype=np.float64), [p[1] for p in pairs]


def apply_rule(rule, meta: pd.DataFrame) -> np.ndarray:
    """1.0 (success), 0.0 (failure) or NaN (the run lacks what the rule needs) per row of ``meta``.

    Parameters
    ----------
    rule : AnswerRule or FieldRule
        The rule.
    meta : DataFrame
        The runs' metadata table (``TraceSet.meta``: ``answer``, ``gold``, ``metadata`` as JSON text or dict).

    Returns
    -------
    ndarray of float64 of shape (n_runs,)

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.label_rules import AnswerRule, apply_rule
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> apply_rule(AnswerRule("numeric", rel_tol=0.01), ts.meta).tolist()
    [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    """
    return judge_all(rule, meta)[0]


@dataclass
class RulePreview:
    """What a rule would write, before anything is written (made by :func:`preview`).

    Parameters
    ----------
    rule : str
        The rule in words.
    labels : ndarray of float64
        The label of every run (1.0, 0.0, NaN).
    n_success, n_failure : int
        Runs labeled success and failure.
    unlabeled : dict, optional
        Reason -> number of runs left unlabeled for it.
    success_examples, failure_examples : DataFrame, optional
        A random sample of each outcome (id, answer, gold).

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.label_rules import RulePreview
    >>> RulePreview("metadata passed", np.array([1.0, np.nan]), 1, 0, {"no passed": 1}).unlabeled
    {'no passed': 1}
    """

    rule: str
    labels: np.ndarray
    n_success: int
    n_failure: int
    unlabeled: dict = field(default_factory=dict)      # reason -> count
    success_examples: pd.DataFrame | None = None
    failure_examples: pd.DataFrame | None = None


def preview(rule, meta: pd.DataFrame, *, n_examples: int = 5, seed: int = 42) -> RulePreview:
    """Counts of both outcomes, the unlabeled runs by reason, and a random sample of each outcome.

    Parameters
    ----------
    rule : AnswerRule or FieldRule
        The rule.
    meta : DataFrame
        The runs' metadata table (``TraceSet.meta``).
    n_examples : int, default 5
        Runs shown per outcome.
    seed : int, default 42
        Seed of the sample.

    Returns
    -------
    RulePreview
        The examples hold the runs' id, answer and gold.

    Examples
    --------
    >>> import htc_core as htc
    >>> from htc_core.label_rules import AnswerRule, preview
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> p = preview(AnswerRule("exact"), ts.meta, n_examples=2)
    >>> p.rule, p.n_success, p.n_failure, p.unlabeled
    ('answer vs gold: exact', 4, 4, {})
    >>> list(p.failure_examples.columns), len(p.failure_examples)
    (['id', 'answer', 'gold'], 2)
    """
    y, why = judge_all(rule, meta)
    rng = np.random.default_rng(seed)
    cols = [c for c in ("id", "answer", "gold") if c in meta.columns]

    def sample(v: float) -> pd.DataFrame:
        rows = np.flatnonzero(y == v)
        rows = np.sort(rng.choice(rows, size=min(n_examples, len(rows)), replace=False)) if len(rows) else rows
        return meta.iloc[rows][cols].reset_index(drop=True)

    reasons = pd.Series([w for w in why if w is not None], dtype=object).value_counts().to_dict()
    return RulePreview(rule.describe(), y, int(np.sum(y == 1)), int(np.sum(y == 0)), reasons, sample(1.0),
                       sample(0.0))
