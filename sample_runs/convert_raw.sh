#!/usr/bin/env bash
# Convert the raw recordings (openai-calllog + labels CSV, possibly split over several _raw* folders)
# into htc-trace JSONL, one folder per family, through the project's own importer. Only trajectories with
# a labels row are kept (a recording stopped mid-run leaves its last calls without an outcome). The
# greedy arithmetic call log (labeled part) and its labels CSV are kept under _calllog/ as an importer example.
# RAW (default sample_runs/_raw*) picks the raw folders and DEST (default: one folder per family) where the
# run sets go, e.g. RAW='sample_runs/_raw_gemma*' DEST=sample_runs/gemma3 for the Gemma runs. APPEND=1 appends
# the new runs to run set files that exist (their lines stay byte for byte; one run set per file, as before) and
# stops with a message, before writing anything, if a new run's id is already in the file (record other tasks:
# collect_runs --start).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p sample_runs/_calllog
export RAW="${RAW:-sample_runs/_raw*}"
export DEST="${DEST:-}"
export APPEND="${APPEND:-}"
python - <<'PY' > sample_runs/_converted.txt
import csv, glob, json, os, sys
from collections import defaultdict
from htc_core.formats import load, native
from htc_core.traces import concat

def existing_ids(path):
    with open(path, encoding="utf-8") as fh:
        return {json.loads(line)["id"] for line in fh if line.strip()}


logs = defaultdict(list)
for log in sorted(glob.glob(os.environ["RAW"] + "/*.calllog.jsonl")):
    logs[os.path.basename(log)[: -len(".calllog.jsonl")]].append(log)
for stem, files in sorted(logs.items()):  # APPEND: every run set checked before anything is written
    path = f"{os.environ['DEST'] or 'sample_runs/' + stem.split('_')[0]}/{stem}.jsonl"
    if os.environ["APPEND"] and os.path.exists(path):
        new = set()
        for log in files:
            with open(log.replace(".calllog.jsonl", ".labels.csv"), newline="", encoding="utf-8") as src:
                new |= {r["id"] for r in csv.DictReader(src)}
        twice = sorted(new & existing_ids(path))
        if twice:
            sys.exit(f"convert_raw: {len(twice)} recorded runs are already in {path} (first: {twice[0]}); "
                     f"nothing written: record other tasks (collect_runs --start)")
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
    path = f"{dest}/{stem}.jsonl"
    if os.environ["APPEND"] and os.path.exists(path):
        path = f"{dest}/{stem}.new.jsonl"      # completed below, then appended to {stem}.jsonl
    native.write(keep, path)
    print(path)
    print(f"{path}: {keep.n_trajectories} labeled trajectories of {recorded} recorded, "
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
for new in $(grep '\.new\.jsonl$' sample_runs/_converted.txt || true); do
  cat "$new" >> "${new%.new.jsonl}.jsonl" && rm "$new"
done
rm -f sample_runs/_converted.txt
