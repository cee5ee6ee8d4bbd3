"""Benchmark: import speed and memory of OpenAI call-log JSONL (top-5 alternatives).

    python -m htc_dev.bench formats [--size-mb SIZE_MB]

Writes a synthetic call log in the exact shape the OpenAI Chat Completions API
returns with ``logprobs=True, top_logprobs=5`` (``token``, ``logprob``,
``bytes`` and five alternatives each with ``bytes``), wrapped as the
recorder writes it (``trajectory_id``, ``step``, ``request``, ``response``),
then reports on one core, in the same run:

- reference: ``json.loads`` of every line and nothing else (MB/s);
- reference: ``orjson.loads`` of every line and nothing else (MB/s);
- ``htc_core.formats.load(..., format="openai-calllog")``: MB/s, and the
  peak traced memory (tracemalloc, separate pass) next to the file size and
  the size of the output arrays: memory is bounded by the output, not by the
  file.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import orjson

from htc_core.synthetic import write_calllog


def _mbps(nbytes: int, seconds: float) -> float:
    return nbytes / 1e6 / seconds if seconds > 0 else float("inf")


def run(print_fn=print, size_mb: float | None = None, path: str | os.PathLike | None = None) -> dict:
    """Run the benchmark; returns the numbers it printed."""
    from htc_core.formats import load

    size_mb = float(size_mb or os.environ.get("HTC_BENCH_MB", 100))
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "calllog.jsonl"
        counts = write_calllog(path, size_mb)
    else:
        counts = {"bytes": Path(path).stat().st_size}
    nbytes = Path(path).stat().st_size
    out: dict = {"file_mb": nbytes / 1e6, **counts}
    print_fn(f"call-log file: {nbytes / 1e6:.1f} MB, {counts.get('calls', '?')} calls, "
             f"{counts.get('tokens', '?')} tokens, top-5 alternatives")

    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    t_json = time.perf_counter() - t0
    out["json_loads_mbps"] = _mbps(nbytes, t_json)
    print_fn(f"reference json.loads per line:   {out['json_loads_mbps']:7.1f} MB/s")

    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            orjson.loads(line)
    t_or = time.perf_counter() - t0
    out["orjson_loads_mbps"] = _mbps(nbytes, t_or)
    print_fn(f"reference orjson.loads per line: {out['orjson_loads_mbps']:7.1f} MB/s")

    t0 = time.perf_counter()
    ts, report = load(path, format="openai-calllog")
    t_htc = time.perf_counter() - t0
    out["htc_import_mbps"] = _mbps(nbytes, t_htc)
    out["trajectories"] = ts.n_trajectories
    out["tokens_read"] = ts.n_tokens
    print_fn(f"htc import (openai-calllog):     {out['htc_import_mbps']:7.1f} MB/s "
             f"({ts.n_trajectories} trajectories, {ts.n_tokens} tokens, k={ts.k}, "
             f"{report.skipped_lines} non-LLM lines skipped, {report.rejected} rejected)")
    token_obj = 0
    if ts.tokens is not None:
        token_obj = ts.tokens.nbytes + sum(sys.getsizeof(t) for t in ts.tokens[: min(len(ts.tokens), 100000)]) * (
            len(ts.tokens) / max(1, min(len(ts.tokens), 100000)))
    out_arrays = ts.memory_bytes() + token_obj
    del ts, report

    tracemalloc.start()
    ts, report = load(path, format="openai-calllog")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["peak_mb"] = peak / 1e6
    out["output_mb"] = out_arrays / 1e6
    print_fn(f"peak traced memory during import: {peak / 1e6:7.1f} MB (file {nbytes / 1e6:.1f} MB; output arrays "
             f"incl. token strings {out_arrays / 1e6:.1f} MB; ratio peak/output {peak / max(out_arrays, 1):.2f})")
    try:
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["max_rss_mb"] = rss
        print_fn(f"process max RSS: {rss:.0f} MB")
    except ImportError:  # pragma: no cover - not on Windows
        pass
    if tmp is not None:
        tmp.cleanup()
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m htc_dev.bench formats", description=__doc__.splitlines()[0])
    p.add_argument("--size-mb", type=float, default=None, help="size of the synthetic call log (default 100 MB)")
    args = p.parse_args(argv)
    run(size_mb=args.size_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
