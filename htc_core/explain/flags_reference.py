"""The per-run reference of :func:`htc_core.explain.flags.structural_flags`: one Python loop over the runs, the
rules written out one trajectory at a time.

This was the implementation until the flags were computed over the trace set's columns (numpy over the
step offsets, string work once per step or per distinct value). It is kept, unchanged, as the plain reference
the tests compare the fast version with (identical frames on hand-made runs, ``sample_runs/`` and the shared
data) and that ``python -m htc_dev.bench flags`` times it against. Not for use elsewhere.
"""

from __future__ import annotations

import pandas as pd

from .flags import (FLAGS, StructuralFlags, _answer_format, _blank, _empty_output, _metadata, _repeated_action,
                    _step_limit, _step_notes, _tool_error, last_step_of, no_final_answer)

__all__ = ["structural_flags_loop"]


def structural_flags_loop(ts) -> StructuralFlags:
    """The structural flags of every trajectory of ``ts``, one run at a time (the reference)."""
    meta = ts.meta
    answers, golds = meta["answer"].to_numpy(dtype=object), meta["gold"].to_numpy(dtype=object)
    metas = meta["metadata"].to_numpy(dtype=object)
    offsets = ts.traj_offsets
    texts = ts.step_text
    rows = []
    for i in range(ts.n_trajectories):
        a, b = int(offsets[i]), int(offsets[i + 1])
        steps = list(texts[a:b])
        limit = _step_limit(_metadata(metas[i]))
        rows.append({
            "no_final_answer": no_final_answer(answers[i], *last_step_of(ts, a, b), limit),
            "step_limit": limit,
            "tool_error": _tool_error(_step_notes(ts, a, b)),
            "repeated_action": _repeated_action(steps),
            "empty_output": _empty_output(steps),
            "answer_format": _answer_format(answers[i], golds[i]),
        })
    frame = pd.DataFrame(rows, columns=list(FLAGS)).astype("boolean")
    available = [f for f in FLAGS if frame[f].notna().any()]
    return StructuralFlags(frame=frame, available=available)
