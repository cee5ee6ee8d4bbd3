"""Plain-Python reference implementation of the 48 HTC features (the test oracle).

Written independently of ``htc_core.features`` straight from the paper's
appendix and DESIGN.md section 3: one trajectory at a time, lists and the
``math`` module only, no NumPy.
"""

from __future__ import annotations

import math

# token_conf and step_summary are the oracle's own steps (not public)
__all__ = ["features", "features_of_trajectory_dict"]

EPS = 1e-8


def _mean(v):
    return sum(v) / len(v) if v else 0.0


def _std(v):
    if not v:
        return 0.0
    m = _mean(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / len(v))


def token_conf(lp, top, k, profile="paper"):
    """(r, top1, topk) of one token; ``top`` is a list of alternative logprobs (may be empty)."""
    r = math.exp(lp)
    alts = [a for a in (top or []) if a is not None and not math.isnan(a) and a > -9999]
    alts.sort(reverse=True)
    if profile == "chosen":
        return r, r, r
    top1 = math.exp(alts[0]) if alts else r
    use = alts[:k]
    if profile == "paper":
        topk = sum(math.exp(a) for a in use) / len(use) if use else r
    elif profile == "deepconf":
        topk = -sum(use) / len(use) if use else -lp
    else:
        raise ValueError(profile)
    return r, top1, topk


def step_summary(r, top1, topk):
    """The step's n, H, kappa, rho, skew, x and y (a dict) from its tokens' r, Top1Conf and TopkConf."""
    n = len(r)
    mu = _mean(r)
    sigma = _std(r)
    total = sum(r)
    pis = [x / (total + EPS) for x in r]
    H = -sum(p * math.log(p + EPS) for p in pis)
    kappa = max(r) / (mu + EPS)
    rho = sigma / (mu + EPS)
    skew = sum(((x - mu) / (sigma + EPS)) ** 3 for x in r) / n if n >= 2 else 0.0
    return {"n": n, "H": H, "kappa": kappa, "rho": rho, "skew": skew, "x": _mean(top1), "y": _mean(topk)}


def _grad(vals):
    d = [vals[i + 1] - vals[i] for i in range(len(vals) - 1)]
    if not d:
        return [0.0] * 5
    trend = d[-1] - d[0] if len(vals) >= 3 else 0.0
    return [_mean(d), _std(d), max(d), min(d), trend]


def features(steps, k=5, profile="paper"):
    """The 48 features of one trajectory, in the paper's order, in plain Python (the oracle of the tests).

    Parameters
    ----------
    steps : list of tuple
        One ``(logprobs, top_logprobs)`` per step: a list of floats and a list of per-token lists of
        alternatives' log-probabilities, or None.
    k : int, default 5
        The alternatives averaged into TopkConf.
    profile : {"paper", "deepconf", "chosen"}, default "paper"
        The token-confidence profile.

    Returns
    -------
    list of float
        48 values, the order of ``htc_core.features.FEATURE_NAMES``.

    Examples
    --------
    >>> from htc_core.features.reference import features
    >>> values = features([([-0.1, -0.2], [[-0.1, -2.5], [-0.2, -1.9]]), ([-0.05], None)])
    >>> len(values), [round(v, 4) for v in values[:3]]
    (48, [0.0894, 0.0, 0.0894])
    """
    summ = []
    token_diffs = []
    for lps, tops in steps:
        confs = [token_conf(lp, (tops[i] if tops else None), k, profile) for i, lp in enumerate(lps)]
        r = [c[0] for c in confs]
        summ.append(step_summary(r, [c[1] for c in confs], [c[2] for c in confs]))
        token_diffs.extend(r[i + 1] - r[i] for i in range(len(r) - 1))
    xs = [s["x"] for s in summ]
    ys = [s["y"] for s in summ]
    Hs = [s["H"] for s in summ]
    ks = [s["kappa"] for s in summ]
    rs = [s["rho"] for s in summ]
    sk = [s["skew"] for s in summ]
    ns = [s["n"] for s in summ]
    out = []
    out += _grad(xs)
    out += _grad(ys)
    if token_diffs:
        out += [_mean(token_diffs), _std(token_diffs), max(token_diffs), min(token_diffs)]
    else:
        out += [0.0] * 4
    out += [_std(Hs) / (_mean(Hs) + EPS), _std(ks) / (_mean(ks) + EPS), _std(rs) / (_mean(rs) + EPS)]
    out += [xs[-1] - xs[0], ys[-1] - ys[0]]
    for s in (summ[0], summ[-1]):
        out += [s["H"], s["kappa"], s["rho"], s["rho"], s["skew"], s["x"], s["y"]]
    out += [_mean(Hs), _std(Hs), _mean(ks), _std(ks), _mean(rs), _std(rs), _mean(rs), _std(rs), _mean(sk), _std(sk)]
    out += [len(steps) / 10.0, float(ns[0]), float(ns[-1]), sum(ns) / len(ns), _std(ns)]
    if len(out) != 48:
        raise RuntimeError(f"the reference built {len(out)} features, not 48 (a bug in this module)")
    return out


def features_of_trajectory_dict(traj, k=5, profile="paper"):
    """The oracle's 48 features of an htc-trace JSONL v1 dict (empty steps skipped, as the reader does).

    Parameters
    ----------
    traj : dict
        One trajectory (:meth:`htc_core.TraceSet.trajectory` gives this shape).
    k : int, default 5
        The alternatives averaged into TopkConf.
    profile : {"paper", "deepconf", "chosen"}, default "paper"
        The token-confidence profile.

    Returns
    -------
    list of float
        48 values, the order of ``htc_core.features.FEATURE_NAMES``.

    Examples
    --------
    >>> import numpy as np
    >>> import htc_core as htc
    >>> from htc_core.features.reference import features_of_trajectory_dict
    >>> ts, _ = htc.load("sample_runs/_examples/units_Gemma3-270M-greedy.jsonl")
    >>> oracle = features_of_trajectory_dict(ts.trajectory(0))
    >>> bool(np.allclose(oracle, htc.extract(ts).values[0], rtol=1e-9, atol=1e-12))
    True
    """
    steps = []
    for st in traj["steps"]:
        if not st["logprobs"]:
            continue
        steps.append((st["logprobs"], st.get("top_logprobs")))
    return features(steps, k=k, profile=profile)
