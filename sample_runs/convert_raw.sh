#!/usr/bin/env bash
# Convert the raw recordings (openai-calllog + labels CSV, possibly split over several _raw* folders)
# into htc-trace JSONL, one folder per family, through the project's own importer. Only trajectories with
# a labels row are kept (a recording stopped mid-run leaves its last calls without an outcome). The
# greedy arithmetic call log (labeled part) and its labels CSV are kept under _calllog/ as an importer example.
# RAW (default sample_runs/_raw*) picks the raw folders and DEST (default: one folder per family) where the
# run sets go, e.g. RAW='sample_runs/_raw_gemma*' DEST=sample_runs/gemma3 for the Gemma runs.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p sample_runs/_calllog
export RAW="${RAW:-sample_runs/_raw*}"
export DEST="${DEST:-}"
python - <<'PY' > sample_runs/_converted.txt
import csv, glob, json, os, sys
from collections import defaultdict
from htc_core.formats import load, native
from htc_core.traces import concat

logs = defaultdict(list)
for log in sorted(glob.glob(os.environ["RAW"] + "/*.calllog.jsonl")):
    logs[os.path.basename(log)[: -len(".calllog.jsonl")]].append(log)
for stem, files in sorted(logs.items()):
    fam = stem.split("_")[0]
    parts, recorded = [], 0
    for log in files:
        ts, report = load(log, format="openai-calllog", labels=log.replace(".calllog.jsonl", ".labels.csv"))
        recorded += ts.n_trajectories
        parts.append(ts.labeled())
    keep = concat(parts)
    first = {}
    for i, tid in enumerate(keep.ids):  # a task recorded by two processes: keep one copy
        first.setdefault(tid, i)
    order = sorted(first.values(), key=lambda i: keep.ids[i])
    keep = keep.take(order)
    dest = os.environ["DEST"] or f"sample_runs/{fam}"
    os.makedirs(dest, exist_ok=True)
    native.write(keep, f"{dest}/{stem}.jsonl")
    print(f"{dest}/{stem}.jsonl")
    print(f"{dest}/{stem}.jsonl: {keep.n_trajectories} labeled trajectories of {recorded} recorded, "
          f"success rate {keep.labels.mean():.3f}", file=sys.stderr)
    if fam == "arithmetic" and stem.endswith("SmolLM2-135M-greedy"):
        ids = set(keep.ids)
        with open(f"sample_runs/_calllog/{stem}.calllog.jsonl", "w") as dst:
            for log in files:
                with open(log) as src:
                    for line in src:
                        if json.loads(line).get("trajectory_id") in ids:
                            dst.write(line)
        rows = []
        for log in files:
            with open(log.replace(".calllog.jsonl", ".labels.csv")) as src:
                rows += [r for r in csv.DictReader(src) if r["id"] in ids]
        with open(f"sample_runs/_calllog/{stem}.labels.csv", "w", newline="") as dst:
            w = csv.DictWriter(dst, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(sorted(rows, key=lambda r: r["id"]))
PY
# input / tool / observation / error of every step, replayed with the agent's own tools
python sample_runs/add_step_fields.py $(cat sample_runs/_converted.txt)
rm -f sample_runs/_converted.txt
