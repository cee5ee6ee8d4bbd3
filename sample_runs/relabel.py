"""Grade the sample runs again with the demo agent's current judge (``tasks.check_answer``), in place.

Each run's task is rebuilt from its id (``facts-0006-...`` is task 6 of ``make_tasks("facts", ...)``, seed 0)
and checked to be the recorded one (question and gold); its recorded final answer is graded again. Only the
``"success"`` value of a run whose grade changed is rewritten: every other byte of every line stays as it was
(ids, texts, tokens, logprobs, metadata). The changes are printed per run set. Running it twice changes nothing.

    python sample_runs/relabel.py                      # print what would change
    python sample_runs/relabel.py --write "WHY"        # rewrite those labels, log them in relabels.tsv

Every rewritten label is appended to ``sample_runs/relabels.tsv`` (date, id, old and new label, answer, gold,
why), so a model card made before a relabel can still be checked against the runs it was trained on. Used once
so far, when the judge learned to accept a plural form ("rupees" for "rupee"): 3 of 3,521 runs changed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import time
from functools import lru_cache

from htc_dev.demo_agent.tasks import Task, check_answer, make_tasks

LABEL = re.compile(r'"success": (true|false)')
TASK_ID = re.compile(r"^([a-z]+)-(\d{4})-")
LOG_FIELDS = ("date", "id", "was", "now", "answer", "gold", "why")


@lru_cache(maxsize=None)
def _tasks(family: str, n: int) -> tuple[Task, ...]:
    return tuple(make_tasks(family, n))


def task_of(run: dict) -> Task:
    """The task a run was recorded on, rebuilt from its id; ValueError when its question or gold differ."""
    m = TASK_ID.match(run["id"])
    if m is None:
        raise ValueError(f"{run['id']}: not a demo agent run id (family-NNNN-model)")
    family, i = m.group(1), int(m.group(2))
    n = 1 << max(i, 1).bit_length()            # a few sizes only, so the cache stays small
    task = _tasks(family, max(n, i + 1))[i]
    if (task.question, task.gold) != (run["question"], run["gold"]):
        raise ValueError(f"{run['id']}: the task rebuilt from the id is {task.question!r} (gold {task.gold!r}), "
                         f"the run holds {run['question']!r} (gold {run['gold']!r})")
    return task


def relabel_line(line: str) -> tuple[str, bool | None]:
    """(the line with its label graded again, the new label when it changed else None)."""
    run = json.loads(line)
    new = check_answer(run["answer"] or None, task_of(run))
    if new == run["success"]:
        return line, None
    labels = LABEL.findall(line)
    if len(labels) != 1:
        raise ValueError(f"{run['id']}: {len(labels)} '\"success\": ' fields on the line, expected 1")
    out = LABEL.sub(f'"success": {"true" if new else "false"}', line)
    assert json.loads(out) == {**run, "success": new}
    return out, new


def relabel_file(path: str, write: bool) -> list[tuple[str, str, str, bool]]:
    """The (id, answer, gold, new label) of every run whose grade changed; the file is rewritten when ``write``."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    out, changed = [], []
    for line in lines:
        new_line, new = relabel_line(line) if line.strip() else (line, None)
        out.append(new_line)
        if new is not None:
            run = json.loads(line)
            changed.append((run["id"], run["answer"], run["gold"], new))
    if write and changed:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(out)
        os.replace(tmp, path)
    return changed


def log_changes(log: str, changed: list[tuple[str, str, str, bool]], why: str) -> None:
    """Append the rewritten labels to the relabel log (tab-separated, a header line when the file is new)."""
    clean = lambda v: str(v).replace("\t", " ").replace("\n", " ")
    new_file = not os.path.exists(log)
    with open(log, "a", encoding="utf-8") as fh:
        if new_file:
            fh.write("\t".join(LOG_FIELDS) + "\n")
        for tid, ans, gold, new in changed:
            row = (time.strftime("%Y-%m-%d"), tid, str(not new).lower(), str(new).lower(), ans, gold, why)
            fh.write("\t".join(map(clean, row)) + "\n")


def main(argv: list[str]) -> int:
    write = "--write" in argv
    if write and (argv.index("--write") + 1 >= len(argv) or not argv[argv.index("--write") + 1].strip()):
        sys.exit("relabel: --write needs the reason, e.g. --write 'judge accepts a plural form'")
    why = argv[argv.index("--write") + 1] if write else ""
    root = os.path.dirname(os.path.abspath(__file__))
    files = sorted(p for p in glob.glob(os.path.join(root, "*", "*.jsonl"))
                   if not os.path.basename(os.path.dirname(p)).startswith("_"))
    total = runs = 0
    for path in files:
        with open(path, encoding="utf-8") as fh:
            n = sum(1 for line in fh if line.strip())
        changed = relabel_file(path, write)
        if write and changed:
            log_changes(os.path.join(root, "relabels.tsv"), changed, why)
        runs += n
        total += len(changed)
        print(f"{os.path.relpath(path, root)}: {n} runs, {len(changed)} labels changed"
              + "".join(f"\n  {tid}: answer {ans!r} (gold {gold!r}) -> {'success' if new else 'failure'}"
                      for tid, ans, gold, new in changed))
    print(f"{total} of {runs} labels {'changed' if write else 'would change'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
