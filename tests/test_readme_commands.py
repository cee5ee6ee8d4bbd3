"""Every command and code block of the READMEs and of the docs runs as written from the checkout.

The commands are read from the fenced ``bash`` and ``python`` blocks of README.md, sample_runs/README.md,
htc_core/collect/README.md and every docs/*.md (the README's topics live there: issue 28 slimmed the README to
what a newcomer needs; nothing is copied here, so an edited page is tested as it is). Outputs of the
commands go to ``out/`` (ignored by git). What cannot run here says why: installation lines (CI's own
set-up runs them), a local model server, hours of recording; benchmarks run with ``-m slow``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "sample_runs/README.md", "htc_core/collect/README.md",
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")))
SHARED = ROOT.parent / "shared"


def blocks(doc: str) -> list[tuple[str, int, str]]:
    """(language, first line number, text) of every fenced block."""
    out, lang, start, buf = [], None, 0, []
    for n, line in enumerate((ROOT / doc).read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and lang is None:
            lang, start, buf = fence.group(1) or "text", n + 1, []
        elif fence:
            out.append((lang, start, "\n".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
    return out


def shell_commands(text: str, first_line: int) -> list[tuple[int, str]]:
    """Logical command lines of a bash block (continuations joined, ``&&`` chains split)."""
    cmds, buf, at = [], "", first_line
    for n, line in enumerate(text.splitlines(), first_line):
        if not buf:
            at = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        if buf.strip() and not buf.strip().startswith("#"):
            cmds.extend((at, part.strip()) for part in buf.split(" && "))
        buf = ""
    return cmds


def collect() -> list[tuple[str, str, str]]:
    """(test id, kind, body) with kind 'bash' or 'python'."""
    items = []
    for doc in DOCS:
        for lang, line, text in blocks(doc):
            if lang == "bash":
                items += [(f"{doc}:{n}", "bash", cmd) for n, cmd in shell_commands(text, line)]
            elif lang == "python":
                items.append((f"{doc}:{line}", "python", text))
    return items


ITEMS = collect()


def why_not_here(kind: str, body: str) -> str | None:
    """None when the command runs in this test, else the reason it cannot."""
    if kind == "bash" and body.startswith("python -m pytest"):
        return "the test suite itself (this test is part of it)"
    if kind == "bash" and re.search(r"(^|\s)pip install\s", body):
        return "installation: CI's own set-up (.ci/run) runs the install commands"
    if "make_sample_runs.sh" in body:
        return "records 2,000 agent runs with a local model: hours on 2 cores"
    if "llama_cpp.server" in body:
        from htc_core.collect.local_server import llama_server_available

        missing = llama_server_available()
        return f"needs a local llama.cpp server: {missing}" if missing else None
    if kind == "python" and "127.0.0.1:8000" in body:
        return "needs an OpenAI-compatible model server on 127.0.0.1:8000 and your own agent"
    if kind == "python" and "px.Client()" in body:
        return "needs a running Arize Phoenix server holding your spans"
    if kind == "python" and "opentelemetry" in body:
        import importlib.util

        for mod in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http",
                    "openinference.instrumentation.openai"):
            if importlib.util.find_spec(mod.split(".")[0]) is None or importlib.util.find_spec(mod) is None:
                return f"needs {mod} (.ci/run installs the OpenTelemetry packages)"
    if re.search(r"--scheduler (tcp|spark)://|^dask (scheduler|worker)|spark-submit", body):
        return "needs a running Dask scheduler or Spark cluster (the LocalCluster commands run here)"
    return _missing_engine(body)


def _missing_engine(body: str) -> str | None:
    import importlib.util

    if "--engine dask" in body and importlib.util.find_spec("distributed") is None:
        return 'needs the [cluster] extra (pip install -e ".[cluster]"; .ci/run installs it)'
    if "--engine spark" in body and importlib.util.find_spec("pyspark") is None:
        return 'needs pyspark and Java (pip install -e ".[spark]")'
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The commands' environment: HOME in a temp folder (``~/.htc`` and ``~/htc-store`` land there)."""
    (ROOT / "out").mkdir(exist_ok=True)
    e = dict(os.environ, HOME=str(tmp_path_factory.mktemp("home")), OMP_NUM_THREADS="1")
    e.pop("HTC_DATA_DIR", None)
    return e


def run_server(cmd: str, env: dict) -> None:
    """Start a server command as written (on a free port; the dashboard headless), wait until it answers,
    stop it."""
    port = _free_port()
    if cmd.startswith("streamlit run"):
        cmd = cmd.replace("app.py", f"app.py --server.headless true --server.port {port}", 1)
        probe = f"http://127.0.0.1:{port}/_stcore/health"
    elif cmd.startswith("htc serve"):
        cmd = re.sub(r"--port \d+", f"--port {port}", cmd)
        probe = f"http://127.0.0.1:{port}/health"
    else:
        cmd = re.sub(r"--port \d+", f"--port {port}", cmd)
        probe = f"http://127.0.0.1:{port}/v1/models"
    log = tempfile.TemporaryFile()   # never a pipe: a chatty server (llama.cpp) would block on a full one
    proc = subprocess.Popen(["bash", "-c", "exec " + cmd], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def output() -> str:
        log.seek(0)
        return log.read().decode(errors="replace")[-3000:]

    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            assert proc.poll() is None, f"exited with {proc.returncode}:\n{output()}"
            try:
                with urllib.request.urlopen(probe, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"the server did not answer within 180 s: {cmd}\n{output()}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def run_command(kind: str, body: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    args = ["bash", "-euo", "pipefail", "-c", body] if kind == "bash" else [sys.executable, "-c", body]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _params():
    for test_id, kind, body in ITEMS:
        marks = []
        reason = why_not_here(kind, body)
        if "llama_cpp.server" in body or "127.0.0.1:8000" in body:
            marks.append(pytest.mark.model_server)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        elif "htc_dev.bench" in body or "--compare-corpus" in body:
            # benchmarks and the fair corpus comparison (2-3 min of CPU each) take minutes; --help of each
            # benchmark runs below, the comparison's pieces in tests/test_train_corpus.py
            marks.append(pytest.mark.slow)
        yield pytest.param(kind, body, id=test_id, marks=marks)


def test_the_readmes_hold_commands():
    assert sum(kind == "bash" for _, kind, _ in ITEMS) >= 10
    assert any(kind == "python" for _, kind, _ in ITEMS)


@pytest.mark.parametrize("kind,body", list(_params()))
def test_readme_command_runs_as_written(kind, body, env):
    if "../shared" in body and not SHARED.is_dir():
        pytest.skip(f"the shared real data is not next to this checkout ({SHARED})")
    if kind == "bash" and (body.startswith(("streamlit run", "htc serve")) or "llama_cpp.server" in body):
        run_server(body, env)
        return
    out = run_command(kind, body, env)
    assert out.returncode == 0, f"{body}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"


def test_every_benchmark_named_in_the_readme_answers_help(env):
    names = sorted({m.group(1) for _, _, body in ITEMS for m in re.finditer(r"python -m htc_dev\.bench (\w+)", body)})
    assert names, "the README names no benchmark"
    for name in names:
        out = run_command("bash", f"python -m htc_dev.bench {name} --help", env, timeout=120)
        assert out.returncode == 0 and "usage" in out.stdout.lower(), (name, out.stderr[-2000:])


def test_commands_write_only_to_ignored_folders():
    """Outputs named by ``--out`` go under out/ (ignored), never into the repository root or a tracked folder."""
    for test_id, kind, body in ITEMS:
        for target in re.findall(r"--out\s+(\S+)", body):
            assert target.startswith(("out/", "/tmp/", "$TMPDIR")), f"{test_id}: --out {target}"
    assert "/out/" in (ROOT / ".gitignore").read_text().splitlines()



@pytest.mark.docs
def test_readme_monitor_example_alerts_no_more_successes_than_early_warning_promises(env, tmp_path):
    """Issue 30 item 1: the README's live-monitor recipe (its `htc fit --prefixes` and `htc monitor` lines, run as
    written) alerts on at most the 10% of successful runs the early-warning table's thresholds are set to."""
    import pandas as pd

    from htc_core.formats import load

    lines = [c for _, kind, body in ITEMS if kind == "bash" for c in [body]
             if re.match(r"htc (fit \S+ --prefixes|monitor out/prefix_model\.json)", c)]
    fit = next(c for c in lines if c.startswith("htc fit"))
    mon = next(c for c in lines if c.startswith("htc monitor"))
    for cmd in (fit, mon):
        out = run_command("bash", cmd, env)
        assert out.returncode == 0, (cmd, out.stderr[-2000:])
    steps = ROOT / re.search(r"--out\s+(\S+)", mon).group(1)
    runs = re.search(r"htc monitor \S+ (\S+)", mon).group(1)
    ts, _ = load(str(ROOT / runs))
    alerted = pd.read_csv(steps).groupby("id")["alert"].any()
    y = pd.Series(ts.labels, index=ts.ids).reindex(alerted.index)
    ok, bad = int(alerted[y == 1].sum()), int(alerted[y == 0].sum())
    print(f"README monitor example: {ok} of {int((y == 1).sum())} successful runs alerted, "
          f"{bad} of {int((y == 0).sum())} failing runs")
    assert ok <= 0.10 * int((y == 1).sum()), (ok, int((y == 1).sum()))
    assert bad >= 0.5 * int((y == 0).sum())


def test_the_readme_is_a_newcomers_page():
    """Issue 28 item 5: the README is what a newcomer needs (the two commands first, a tour, the library, the
    CLI, where things are, links); the topics and the measurements live in docs/*.md, and every link resolves."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail to docs/<topic>.md"
    first = blocks("README.md")[0]
    assert first[0] == "bash" and first[1] == 4            # the first thing under the title
    assert first[2].splitlines()[0].endswith("streamlit run app.py     # main job: the dashboard, opens on sample_runs/")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for cmd in re.findall(r'^(python -m pytest -m "[^"]+")', ci, flags=re.M):   # CI runs the README's commands
        assert cmd in text, cmd
    for heading in ("## A five-minute tour", "## The library in ten lines", "## The command line",
                    "## Where things are", "## Tests", "## Documentation"):
        assert heading in lines, heading
    for topic in ("benchmarks", "reliability"):
        assert f"docs/{topic}.md" in text
    for doc in ["README.md", *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").glob("*.md")))]:
        body = re.sub(r"`[^`\n]*`", "", (ROOT / doc).read_text(encoding="utf-8"))   # code spans hold no links
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", body):
            if re.match(r"[a-z]+://", target):
                continue
            assert ((ROOT / doc).parent / target).exists(), f"{doc}: link to {target} resolves to nothing"
