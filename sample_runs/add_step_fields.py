"""Complete the shipped sample runs with their step fields (input, tool, observation, error), in place.

The recordings kept each call's generated text, token logprobs and alternatives, but not the messages that
came in or the tool results. The demo agent is deterministic around the model, so replaying each recorded
step text through its own prompt code and tools (``htc_dev.demo_agent.replay``) recovers them exactly.
Only those step keys are added or replaced: ids, texts, tokens, logprobs, labels and metadata stay as they
were, byte for byte (each line is re-serialized with ``json.dumps(..., ensure_ascii=False)``, the form the
native writer produced, which round-trips these lines unchanged). Running it twice changes nothing.

    python sample_runs/add_step_fields.py [FILE.jsonl ...]   # default: every sample_runs/<family>/*.jsonl
"""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path

from htc_dev.demo_agent.replay import replay_steps

FIELDS = ("input", "tool", "observation", "error")


def complete_line(line: str) -> str:
    obj = json.loads(line)
    steps = obj["steps"]
    replayed = replay_steps(obj["dataset"], obj["question"], [st.get("text") or "" for st in steps])
    if len(replayed) != len(steps):
        raise ValueError(f"{obj['id']}: the replay stopped after {len(replayed)} of {len(steps)} steps "
                         f"(a final answer before the last step?)")
    for st, fields in zip(steps, replayed):
        for k in FIELDS:
            st.pop(k, None)
        st.update(fields)
    return json.dumps(obj, ensure_ascii=False) + "\n"


def complete_file(path: str) -> tuple[int, int, int]:
    """Rewrite one file atomically; returns (trajectories, bytes before, bytes after)."""
    before = os.path.getsize(path)
    with open(path, encoding="utf-8") as fh:
        lines = [complete_line(ln) for ln in fh if ln.strip()]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    os.replace(tmp, path)
    return len(lines), before, os.path.getsize(path)


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent
    files = argv or sorted(glob.glob(str(root / "[!_]*" / "*.jsonl")))
    total_before = total_after = 0
    for f in files:
        n, b, a = complete_file(f)
        total_before += b
        total_after += a
        print(f"{os.path.relpath(f)}: {n} trajectories, {b / 1e6:.2f} MB -> {a / 1e6:.2f} MB")
    print(f"total {total_before / 1e6:.2f} MB -> {total_after / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
