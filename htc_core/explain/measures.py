"""What each of the 48 features measures, in plain words: the description explanations give next to a signal's
name (:func:`name_of`, the name every page gives the feature).

The paper's names describe how a feature was built (``attention_spread_mean``), and some of those words mislead:
nothing here is an attention weight. Every "attention" feature is a statistic of the token probabilities r of one
step (DESIGN.md section 3): H_t is the entropy of r normalized over the step's tokens (it grows with the number of
tokens), kappa_t the largest r over the mean r, rho_t the standard deviation of r over its mean. The names below
say that, so a reason reads as what was measured.

A few features are stored on another scale than the words name (``normalized_step_count`` is the number of steps
/ 10) or count something (tokens): :func:`format_measure` writes their values in the unit the words name ("4
steps", "13.5 tokens"), so that "Number of steps is 4 steps" never reads "0.4". The audit of all 48: the step
count is the only feature stored on another scale; the four token counts get their unit; every other feature is a
probability, a change of probabilities or a ratio of them, without a unit, written as stored.
"""

from __future__ import annotations

__all__ = ["name_of", "measure_of", "MEASURES", "format_measure"]

_STEP_STAT = {
    "entropy": "evenness of the token probabilities within a step (grows with the step's length)",
    "concentration": "peak token probability relative to the step's mean",
    "spread": "variation of the token probabilities within a step (std / mean)",
    "volatility": "variation of the token probabilities within a step (std / mean)",
    "skewness": "skew of the token probabilities within a step",
}
_POSITION = {
    "attention_entropy": "evenness of its token probabilities (grows with its length)",
    "attention_concentration": "its peak token probability relative to its mean",
    "attention_spread": "variation of its token probabilities (std / mean)",
    "confidence_volatility": "variation of its token probabilities (std / mean)",
    "confidence_skewness": "skew of its token probabilities",
    "top1_avg": "probability of the most likely token, mean over its tokens",
    "topk_avg": "mean probability of the top-k alternatives, mean over its tokens",
}
_GRADIENT = {"top1": "step-to-step change of the most likely token's probability",
             "topk": "step-to-step change of the mean top-k probability",
             "token": "token-to-token change of the chosen token's probability"}
_STAT_WORD = {"mean": "mean", "std": "variability", "max": "largest rise", "min": "largest fall",
              "trend": "trend from first to last step"}


def _measure(name: str) -> str:
    for key, what in _GRADIENT.items():
        if name.startswith(f"{key}_gradient_"):
            return f"{what}: {_STAT_WORD[name.rsplit('_', 1)[1]]}"
    if name.startswith("step_progression_"):
        stat = name.removeprefix("step_progression_")
        return f"how much the {_STEP_STAT[stat].split(' (')[0]} varies from step to step"
    if name in ("top1_confidence_change", "topk_confidence_change"):
        what = "the most likely token's probability" if name.startswith("top1") else "the mean top-k probability"
        return f"change of {what} from the first to the last step"
    for where in ("first", "last"):
        if name.startswith(f"{where}_") and name.removeprefix(f"{where}_") in _POSITION:
            return f"{where} step: {_POSITION[name.removeprefix(where + '_')]}"
    for stat, what in _STEP_STAT.items():
        for agg, word in (("mean", "mean over steps"), ("std", "variability across steps")):
            if name in (f"attention_{stat}_{agg}", f"token_{stat}_{agg}"):
                return f"{what}, {word}"
    return {"normalized_step_count": "number of steps",
            "first_token_count": "length of the first step (tokens)",
            "last_token_count": "length of the last step (tokens)",
            "avg_tokens_per_step": "tokens per step, mean",
            "std_tokens_per_step": "tokens per step, variability"}.get(name, name.replace("_", " "))


def _all() -> dict[str, str]:
    from ..features import FEATURE_NAMES

    return {n: _measure(n) for n in FEATURE_NAMES}


# feature name -> what it measures (the 48 features of the paper)
MEASURES: dict[str, str] = _all()


def name_of(name: str) -> str:
    """A feature's name in an explanation: the name every page, table and figure gives it
    (:func:`htc_core.features.feature_label` without the code), so a reason names a feature as the rest does.

    A feature stored on another scale than its value is written in (:data:`UNITS`: the step count, stored / 10)
    loses that scale from its name, since a reason writes the value in its unit ("Number of steps is 4 steps", not
    "Number of steps / 10 is 4 steps").

    Parameters
    ----------
    name : str
        A feature name (one of the 48 of the paper, or any other).

    Returns
    -------
    str
        The registry's short name; for a feature not registered, its name with spaces for underscores.

    Examples
    --------
    >>> from htc_core.explain.measures import name_of
    >>> from htc_core.features import feature_label
    >>> name_of("last_top1_avg"), feature_label("last_top1_avg")
    ('Last step top-1 probability, mean', 'F31 Last step top-1 probability, mean')
    >>> name_of("normalized_step_count"), feature_label("normalized_step_count")
    ('Number of steps', 'F43 Number of steps / 10')
    >>> name_of("my_feature")
    'my feature'
    """
    from ..features import REGISTRY

    spec = REGISTRY.get(str(name))
    if spec is None:
        return str(name).replace("_", " ")
    factor = UNITS.get(spec.name, (1.0,))[0]
    return spec.display_name.removesuffix(f" / {factor:g}") if factor != 1.0 else spec.display_name


def measure_of(name: str) -> str:
    """What feature ``name`` measures, in plain words: the description an explanation gives next to the feature's
    name (:func:`name_of`).

    Parameters
    ----------
    name : str
        A feature name (one of the 48 of the paper, or any other).

    Returns
    -------
    str
        The measure in words; for a feature not registered, its name with spaces for underscores.

    Examples
    --------
    >>> from htc_core.explain.measures import measure_of
    >>> measure_of("last_top1_avg")
    'last step: probability of the most likely token, mean over its tokens'
    >>> measure_of("top1_gradient_min")
    "step-to-step change of the most likely token's probability: largest fall"
    >>> measure_of("my_feature")
    'my feature'
    """
    return MEASURES.get(str(name)) or _measure(str(name))


#: feature name -> (factor from the stored value to the worded one, unit for 1, unit for other counts): the features
#: whose value is a count (every other feature is unitless and stored on the scale its words name)
UNITS: dict[str, tuple[float, str, str]] = {
    "normalized_step_count": (10.0, "step", "steps"),          # stored as the step count / 10 (the paper's S / 10)
    "first_token_count": (1.0, "token", "tokens"),
    "last_token_count": (1.0, "token", "tokens"),
    "avg_tokens_per_step": (1.0, "token", "tokens"),
    "std_tokens_per_step": (1.0, "token", "tokens"),
}


def format_measure(name: str, value: float, digits: int = 3) -> str:
    """A feature's value written in the unit that :func:`measure_of` names (3 significant digits by default).

    Parameters
    ----------
    name : str
        A feature name.
    value : float
        Its value as stored in the feature matrix.
    digits : int, default 3
        Significant digits (trailing zeros dropped: 4 steps stays "4 steps").

    Returns
    -------
    str
        E.g. "4 steps" for ``normalized_step_count`` 0.4, "13.5 tokens", "0.521" for a unitless feature, "n/a" for
        a non-finite value.

    Examples
    --------
    >>> from htc_core.explain.measures import format_measure
    >>> format_measure("normalized_step_count", 0.4), format_measure("normalized_step_count", 0.1)
    ('4 steps', '1 step')
    >>> format_measure("avg_tokens_per_step", 13.5), format_measure("last_top1_avg", 0.52149)
    ('13.5 tokens', '0.521')
    """
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return "n/a"
    factor, one, many = UNITS.get(str(name), (1.0, "", ""))
    v = value * factor + 0.0                                     # + 0.0: -0.0 is written "0", not "-0"
    text = f"{v:.{int(digits)}g}"
    if not one:
        return text
    return f"{text} {one if text == '1' else many}"


#: the most significant digits :func:`format_apart` writes to tell a value from a centre
MAX_APART_DIGITS = 6


def format_apart(name: str, value: float, centre: float) -> tuple[str, str]:
    """A value and the centre it is compared with, written so that they read differently when they differ.

    Both in the unit :func:`measure_of` names, with 3 significant digits, or as many more (at most
    :data:`MAX_APART_DIGITS`) as it takes for the two texts to differ: "1.187" below "1.193", never "1.19" below
    "1.19". Two texts alike (at 3 digits) mean the values are equal at :data:`MAX_APART_DIGITS` digits; the words
    then say the value is at the centre.

    Parameters
    ----------
    name : str
        A feature name.
    value, centre : float
        The run's value and the centre (e.g. the mean of the runs a model was fitted on), as stored.

    Returns
    -------
    tuple of str
        The value's text and the centre's text, with the same number of significant digits.

    Examples
    --------
    >>> from htc_core.explain.measures import format_apart
    >>> format_apart("last_top1_avg", 1.1874, 1.1931), format_apart("last_top1_avg", 0.52149, 0.4)
    (('1.187', '1.193'), ('0.521', '0.4'))
    >>> format_apart("normalized_step_count", 0.4, 0.40004), format_apart("last_top1_avg", 1 / 3, 1 / 3 + 1e-9)
    (('4 steps', '4.0004 steps'), ('0.333', '0.333'))
    """
    for digits in range(3, MAX_APART_DIGITS + 1):
        shown = format_measure(name, value, digits), format_measure(name, centre, digits)
        if shown[0] != shown[1]:
            return shown
    return format_measure(name, value), format_measure(name, centre)
