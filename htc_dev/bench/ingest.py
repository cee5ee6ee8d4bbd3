"""Ingest benchmark: ``htc features`` end to end against the JSON parser alone, and its scaling with input size.

    python -m htc_dev.bench ingest [--trajectories 3000] [--sizes 30000,300000,1000000] [--skip-scaling]

1. Parser speed. A synthetic htc-trace JSONL file in the issue-17 shape (3,000 trajectories x 10 steps x 50
   tokens, top-5 alternatives, logprobs written with 8 decimals as APIs do, about 106 MB) is generated under the
   temporary folder. Every figure is the CPU time (user + system, best of ``--repeats``) of a NEW process, start
   included: the floors stream the file line by line through stdlib ``json.loads`` and through
   ``orjson.loads`` and drop each decoded value; the start alone (``python -c "import numpy"``, and ``htc
   features`` on a 1-line file: interpreter, numpy, simdjson, the readers, pyarrow for the CSV; no pandas);
   ``formats.load`` (the reader: parse, checks, arrays); ``htc features FILE --out X.csv`` end to end (reader,
   48 features, CSV written). The children's bytecode is cached (``child_env``: an installed package's is);
   the start and ``htc features`` are also measured in the environment as it is (where
   ``PYTHONDONTWRITEBYTECODE`` is set and the checkout has no ``__pycache__``, every start compiles the sources).
   The load average is printed before and after. Then where the CPU of one ``htc features`` process goes
   (``breakdown``: the command's main steps timed in place, in a new process).
   Targets (issue 29): ``htc features`` <= 1.0x the stdlib pass and <= 3x the orjson pass.
2. Scaling. Files of N small trajectories (5 steps x 20 tokens, no alternatives, the issue's 1M case) for
   each N of ``--sizes``; ``htc features`` runs in a fresh process per size and its wall time, CPU time and
   peak resident memory (the child's own VmHWM) are printed, with the streaming ``json.loads`` pass over the
   same file (a new process too) as the floor.

Generated files stay in ``$TMPDIR/htc-bench-ingest`` (reused when present, never inside the checkout).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

DIR = Path(tempfile.gettempdir()) / "htc-bench-ingest"


def write_file(path: Path, n_traj: int, n_steps: int, n_tokens: int, k: int, seed: int = 0,
                block: int = 2000) -> Path:
    """htc-trace JSONL of random trajectories (values with 8 decimals), written in blocks."""
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as fh:
        for start in range(0, n_traj, block):
            m = min(block, n_traj - start)
            lp = np.round(np.log(rng.beta(4.0, 1.0, (m, n_steps, n_tokens)) + 1e-9), 8)
            top = None
            if k:
                gaps = rng.exponential(1.5, (m, n_steps, n_tokens, k - 1))
                first = np.maximum(lp, np.log(rng.uniform(0.3, 1.0, lp.shape)))
                top = np.round(np.concatenate([first[..., None], first[..., None] - np.cumsum(gaps, -1)], -1), 8)
            ok = rng.random(m) < 0.5
            lines = []
            for i in range(m):
                steps = [{"name": f"step {s}", "logprobs": lp[i, s].tolist(),
                          **({"top_logprobs": top[i, s].tolist()} if k else {})} for s in range(n_steps)]
                lines.append(orjson.dumps({"id": f"run-{start + i}", "dataset": "bench", "model": "synthetic",
                                           "success": bool(ok[i]), "steps": steps}))
            fh.write(b"\n".join(lines) + b"\n")
    tmp.rename(path)
    return path


#: the floors: a new Python process that streams the file line by line and drops every decoded value. The file
#: is read with the 1 MB buffer the readers use (``jsonio.open_binary``): the default 8 KB buffer costs 0.04-0.05 s
#: more CPU on the 112 MB file, which would flatter every ratio
FLOOR = {"json": "import json, sys\nfor line in open(sys.argv[1], 'rb', buffering=1 << 20):\n    json.loads(line)\n",
         "orjson": "import orjson, sys\nfor line in open(sys.argv[1], 'rb', buffering=1 << 20):\n"
                   "    orjson.loads(line)\n"}
READER = "import sys\nfrom htc_core.formats import load\nload(sys.argv[1])\n"
#: what the typed decode starts from: simdjson's parse of each line, the document dropped (no value converted)
SIMDJSON = ("import simdjson, sys\np = simdjson.Parser()\nfor line in open(sys.argv[1], 'rb', buffering=1 << 20):\n"
            "    doc = p.parse(line)\n    del doc\n")
START = "import numpy\n"


def floors(path: Path, repeats: int = 1) -> dict:
    """CPU seconds (best of ``repeats``) of a streaming stdlib ``json.loads`` and ``orjson.loads`` pass over
    ``path``, each in a new process (interpreter start included, as for ``htc features``)."""
    return {name: min(_run_script(code, [str(path)])[1] for _ in range(repeats)) for name, code in FLOOR.items()}


def parser_speed(print_fn=print, n_traj: int = 3000, repeats: int = 3) -> dict:
    """``htc features`` and the reader alone against the streaming floors, every figure a new process."""
    DIR.mkdir(exist_ok=True)
    path = write_file(DIR / f"native-{n_traj}x10x50-top5.jsonl", n_traj, 10, 50, 5)
    small = write_file(DIR / "native-50x10x50-top5.jsonl", 50, 10, 50, 5)
    out = DIR / "features.csv"
    _run_measured(["features", str(small), "--out", str(out)])  # kernels and bytecode compiled into the caches once
    _run_script(READER, [str(small)])
    for code in FLOOR.values():
        _run_script(code, [str(small)])
    size = path.stat().st_size
    print_fn(f"== parser speed: {path.name}, {size / 1e6:.0f} MB, {n_traj} trajectories, {n_traj * 500:,} tokens, "
             f"top-5; CPU seconds of a new process each (start included), best of {repeats}; load average "
             f"{_load()} ==")
    pycache = (Path(__file__).resolve().parents[2] / "htc_core" / "__pycache__").is_dir()
    print_fn(f"(the children's bytecode is cached under {child_env()['PYTHONPYCACHEPREFIX']}, as an installed "
             f"package's is; the rows 'environment as is' run without that cache: PYTHONDONTWRITEBYTECODE="
             f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}, htc_core/__pycache__ "
             f"{'present' if pycache else 'absent'})")
    fl = floors(path, repeats)
    one = write_file(DIR / "native-1x10x50-top5.jsonl", 1, 10, 50, 5)
    rows = {"floor: stdlib json.loads, streaming": fl["json"], "floor: orjson.loads, streaming": fl["orjson"],
            "simdjson parse, streaming (reference)": min(_run_script(SIMDJSON, [str(path)])[1]
                                                         for _ in range(repeats)),
            "start: python + numpy (no input)": min(_run_script(START, [])[1] for _ in range(repeats)),
            "start: htc features on a 1-line file": min(_run_measured(["features", str(one), "--out", str(out)])[1]
                                                        for _ in range(repeats)),
            "formats.load (reader only)": min(_run_script(READER, [str(path)])[1] for _ in range(repeats)),
            "htc features end to end": min(_run_measured(["features", str(path), "--out", str(out)])[1]
                                           for _ in range(repeats)),
            "start, environment as is": min(_run_measured(["features", str(one), "--out", str(out)],
                                                                  bytecode=False)[1] for _ in range(repeats)),
            "htc features, environment as is": min(
                _run_measured(["features", str(path), "--out", str(out)], bytecode=False)[1] for _ in range(repeats))}
    for name, t in rows.items():
        print_fn(f"{name:38s} {t:7.2f} s  {size / 1e6 / t:7.1f} MB/s  {t / fl['json']:5.2f}x json  "
                 f"{t / fl['orjson']:5.2f}x orjson")
    ratio = rows["htc features end to end"] / fl["json"]
    ratio_or = rows["htc features end to end"] / fl["orjson"]
    start = rows["start: htc features on a 1-line file"]
    print_fn(f"htc features / streaming json.loads CPU: {ratio:.2f}x (target <= 1.0x); / orjson.loads: "
             f"{ratio_or:.2f}x (target <= 3x)")
    print_fn(f"of which the start (interpreter, numpy, simdjson, readers, pyarrow; 1-line file): {start:.2f} s = "
             f"{start / fl['json']:.2f}x the whole json.loads pass; after the start: "
             f"{(rows['htc features end to end'] - start) / fl['json']:.2f}x json.loads")
    print_fn(f"load average after: {_load()}")
    parts = breakdown(path, print_fn)
    return {"mb": size / 1e6, **rows, "ratio": ratio, "ratio_orjson": ratio_or, "breakdown": parts,
            "calllog": calllog_speed(print_fn, repeats=repeats)}


#: ``htc features`` in a child process with its main steps wrapped in CPU timers (the wrapping costs about
#: 1 us a call, 20k calls on the bench file); prints ``step<TAB>seconds`` lines
_BREAKDOWN = r"""
import resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
acc = {}
def wrap(owner, name, label):
    f = getattr(owner, name)
    def timed(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            acc[label] = acc.get(label, 0.0) + time.process_time() - t
    setattr(owner, name, timed)
from htc_core.cli import main
import htc_core.features as feats
import htc_core.features.pieces as pieces
import htc_core.formats as fmts
import htc_core.formats.chunks as chunks
import htc_core.formats.native as native
import htc_core.tablewriter as tw
import htc_core.traces.builder as builder
start = cpu()
wrap(fmts, "detect", "format detection (8 MB sample)")
wrap(native, "decode_steps", "typed decode (simdjson parse, shape proofs, copies)")
wrap(native, "typed_steps", "range, order and token checks")
wrap(native, "native_detail", "step diagnosis fields")
wrap(chunks, "add_record", "add_record + builder.add")
wrap(builder.TraceSetBuilder, "build", "builder.build (concatenation)")
wrap(pieces, "extract", "the 48 features")  # htc features computes them piece by piece
wrap(tw.TableWriter, "write_columns", "CSV (pyarrow import included)")
main(["features", sys.argv[1], "--out", sys.argv[2]])
total = cpu()
print("interpreter + imports before the command	%f" % start)
for k, v in acc.items():
    print("%s	%f" % (k, v))
print("the rest: reading lines, the record loop, fields	%f" % (total - start - sum(acc.values())))
print("total	%f" % total)
"""


def breakdown(path: Path, print_fn=print, repeats: int = 3) -> dict:
    """Where the CPU of an ``htc features`` process on ``path`` goes: each step's minimum over ``repeats`` new
    processes (a step's time moves with the load and with fresh memory, by up to 2x between runs)."""
    env = child_env()
    parts: dict[str, float] = {}
    for _ in range(repeats):
        p = subprocess.run([sys.executable, "-c", _BREAKDOWN, str(path), str(DIR / "features.csv")], env=env,
                           capture_output=True, text=True, check=True)
        for ln in p.stdout.splitlines():
            if "\t" in ln:
                k, v = ln.split("\t")
                parts[k] = min(parts.get(k, float("inf")), float(v))
    print_fn(f"where the CPU of an htc features process goes (steps timed in place, each the minimum of "
             f"{repeats} processes; the total is the best whole run):")
    for k, v in parts.items():
        print_fn(f"  {k:52s} {v:6.3f} s")
    return parts


def calllog_speed(print_fn=print, size_mb: float = 50, repeats: int = 2) -> dict:
    """The OpenAI call-log reader (``htc_core.synthetic.write_calllog``: Chat Completions responses with top-5
    token alternatives, one logged call per line) against the same parse references, CPU seconds."""
    from htc_core.formats import load
    from htc_core.synthetic import write_calllog

    path = DIR / f"calllog-{size_mb:g}MB.jsonl"
    if not path.exists():
        write_calllog(path, size_mb)
    size = path.stat().st_size
    print_fn(f"== call-log reader: {path.name}, {size / 1e6:.0f} MB (CPU seconds, best of {repeats}) ==")
    fl = floors(path, repeats)
    code = "import sys\nfrom htc_core.formats import load\nload(sys.argv[1], format='openai-calllog')\n"
    rows = {"floor: stdlib json.loads, streaming": fl["json"], "floor: orjson.loads, streaming": fl["orjson"],
            "formats.load, openai-calllog": min(_run_script(code, [str(path)])[1] for _ in range(repeats))}
    for name, t in rows.items():
        print_fn(f"{name:38s} {t:7.2f} s  {size / 1e6 / t:7.1f} MB/s  {t / fl['json']:5.2f}x json  "
                 f"{t / fl['orjson']:5.2f}x orjson")
    return rows


_PEAK = ("import atexit, re, sys\n"
         "def _peak():\n"
         "    s = open('/proc/self/status').read()\n"
         "    print('HTC_PEAK_KB', re.search(r'VmHWM:\\s+(\\d+)', s).group(1), file=sys.stderr)\n"
         "atexit.register(_peak)\n")
_CHILD = _PEAK + "from htc_core.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _load() -> str:
    """The 1-, 5- and 15-minute load averages (CPU figures move with the load of a shared machine)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _run_measured(argv: list[str], bytecode: bool = True) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak resident MiB, exit code) of ``htc ARGV`` in a child process."""
    return _run_script(_CHILD, argv, bytecode)


def child_env(bytecode: bool = True) -> dict:
    """The environment of every measured child: this checkout's ``htc_core`` first on the path, and (``bytecode``)
    the modules' compiled bytecode kept under ``DIR / "pycache"`` (``PYTHONPYCACHEPREFIX``; a set
    ``PYTHONDONTWRITEBYTECODE`` is dropped), as an installed package has it: pip compiles the bytecode at install
    time, and a checkout writes its ``__pycache__`` at the first run. Without it (``bytecode=False``) the child
    runs in this environment as it is: where ``PYTHONDONTWRITEBYTECODE`` is set and the checkout has no
    ``__pycache__`` (this project's sandboxes), every start compiles the package's sources again (0.05-0.06 s CPU
    for ``htc features``)."""
    root = str(Path(__file__).resolve().parents[2])  # this htc_core, not another installed one
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("PYTHONPYCACHEPREFIX", str(DIR / "pycache"))
    return env


def _run_script(code: str, argv: list[str], bytecode: bool = True) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak resident MiB, exit code) of ``python -c CODE ARGV`` in a child process (``child_env``).

    The peak is the child's own ``VmHWM`` after exec (``ru_maxrss`` would also count the pages of this process
    at fork time, which holds the reference pass's decoded lines)."""
    t0 = time.perf_counter()
    env = child_env(bytecode)
    code = code if code is _CHILD else _PEAK + code
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr.close()
    if rc:
        print(err[-2000:], file=sys.stderr)
    peak = [int(x) for x in re.findall(r"HTC_PEAK_KB (\d+)", err)]
    return wall, ru.ru_utime + ru.ru_stime, (peak[-1] / 1024.0 if peak else float("nan")), rc


def scaling(print_fn=print, sizes=(30_000, 300_000, 1_000_000), chunk: int = 50_000) -> list[dict]:
    DIR.mkdir(exist_ok=True)
    print_fn(f"== scaling: N trajectories x 5 steps x 20 tokens, no alternatives; htc features --chunk-size "
             f"{chunk:,} in a fresh process per size ==")
    print_fn(f"{'N':>10s} {'MB':>7s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MiB':>13s} {'json.loads CPU s':>17s} "
             f"{'ratio':>6s} {'CPU us/traj':>12s}")
    out = []
    for n in sizes:
        path = write_file(DIR / f"native-{n}x5x20.jsonl", n, 5, 20, 0)
        csv = DIR / "scaling.csv"
        wall, cpu, rss, rc = _run_measured(["features", str(path), "--out", str(csv), "--chunk-size", str(chunk)])
        floor = floors(path)["json"]
        row = {"n": n, "mb": path.stat().st_size / 1e6, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss,
               "json_cpu_s": floor, "rc": rc}
        out.append(row)
        print_fn(f"{n:>10,d} {row['mb']:7.0f} {wall:8.1f} {cpu:8.1f} {rss:13.0f} {floor:17.1f} {cpu / floor:6.2f} "
                 f"{cpu / n * 1e6:12.1f}" + ("" if rc == 0 else f"  (exit {rc})"))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.bench ingest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trajectories", type=int, default=3000, help="parser-speed file size (default 3,000)")
    p.add_argument("--repeats", type=int, default=3, help="repeats of each parser-speed figure, the minimum is "
                   "printed (default 3)")
    p.add_argument("--sizes", default="30000,300000,1000000", help="scaling sizes (default 30000,300000,1000000)")
    p.add_argument("--chunk-size", type=int, default=50_000, help="htc features --chunk-size for scaling")
    p.add_argument("--skip-parser", action="store_true", help="only the scaling figures")
    p.add_argument("--skip-scaling", action="store_true", help="only the parser-speed figures")
    args = p.parse_args(argv)
    if not args.skip_parser:
        parser_speed(n_traj=args.trajectories, repeats=args.repeats)
    if not args.skip_scaling:
        scaling(sizes=tuple(int(s) for s in args.sizes.split(",") if s.strip()), chunk=args.chunk_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
