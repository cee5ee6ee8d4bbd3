"""Dashboard benchmark: prints the numbers behind the dashboard's targets (no assertions).

    python -m htc_dev.bench dashboard [--trajectories 10000] [--steps 5] [--tokens 100] [--top-k 0]
                                       [--seeds 1] [--alphas paper|quick] [--skip-browser] [--skip-upload]
                                       [--calibration-only]

1. Cold start: a fresh ``streamlit run app.py`` process on a store that already holds the sample runs
   (the first run loaded them), until the Runs page is drawn in headless Chromium (Playwright). Without
   Chromium, a fresh Python process running the app once with AppTest is timed instead (said so).
2. Each page once cached: the script run time of every page (AppTest), second visit.
3. Upload to a drawn Calibration page: a synthetic OpenAI call-log file (the recorder's shape:
   ``trajectory_id``, ``step``, ``response`` = a Chat Completions response with logprobs) of
   ``--trajectories`` x ``--steps`` calls x ``--tokens`` tokens, uploaded through the Runs page's
   uploader (AppTest), stored, then the Calibration page drawn with the evaluation; stage times printed.
4. UMAP and t-SNE of the uploaded trajectories' features.
5. The Calibration page on the sample runs (``calibration_visits``): first visit (all methods, the evaluation
   computed), a later visit, a reload (new session) and a restart (read back from the store). Targets: first
   < 5 s on an idle machine, later visits and reloads < 1 s. ``--calibration-only`` runs just this part.

The sample runs are ``sample_runs/`` when it holds files, else the UALA HotpotQA runs in
``../shared/data/uala-hotpotqa`` stand in (the output says which).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from . import checkout_root, shared_data_dir
from .server import free_port, open_when_up, start_app, chromium_path, launch_chromium

ROOT = checkout_root() or Path.cwd()
APP = ROOT / "app.py"
PAGES = ["runs", "calibration", "weights", "feature_space", "examples", "compare", "inspector"]
QUICK_ALPHAS = "0.01,0.1,1,10"
_WORDS = [" the", " of", " and", " to", " a", " in", " is", " Thought", ":", " Action", "[", "]", " Paris",
          " France", " capital", ".", ",", "\n", " I", " need", " find", " year", " film", " 19", "87", " Search"]


def sample_dir() -> tuple[Path, str]:
    from htc_core.app.ingest import sample_files

    own = ROOT / "sample_runs"
    if own.is_dir() and sample_files(own):
        return own, "sample_runs/"
    uala = shared_data_dir() / "uala-hotpotqa"
    return uala, f"{uala} (stand-in: sample_runs/ is empty)"


def write_calllog(path: Path, n_traj: int, steps: int, tokens: int, top_k: int, seed: int = 0) -> dict:
    """OpenAI call-log JSONL in the recorder's shape; returns counts."""
    rng = random.Random(seed)
    n_tok = 0
    with open(path, "wb") as fh:
        for t in range(n_traj):
            tid = f"run-{t:06d}"
            hard = rng.random() < 0.4
            for s in range(steps):
                content = []
                n = max(1, int(rng.gauss(tokens, tokens / 5)))
                for _ in range(n):
                    tok = rng.choice(_WORDS)
                    lp = -rng.expovariate(3.0 if not hard else 1.5)
                    item = {"token": tok, "logprob": round(lp, 6), "bytes": list(tok.encode())}
                    if top_k:
                        alts = sorted((round(lp - rng.expovariate(1.0) * j, 6) for j in range(top_k)), reverse=True)
                        item["top_logprobs"] = [{"token": rng.choice(_WORDS), "logprob": a, "bytes": None} for a in alts]
                    else:
                        item["top_logprobs"] = []
                    content.append(item)
                n_tok += n
                text = "".join(c["token"] for c in content)
                resp = {"id": f"chatcmpl-{tid}-{s}", "object": "chat.completion", "created": 1700000000 + s,
                        "model": "bench-model",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "logprobs": {"content": content}, "finish_reason": "stop"}]}
                line = {"trajectory_id": tid, "step": s, "response": resp}
                if s == 0:
                    line["request"] = {"messages": [{"role": "user", "content": f"question {t}"}]}
                fh.write(orjson.dumps(line) + b"\n")
    labels = path.with_name("labels.csv")
    rng = random.Random(seed)
    with open(labels, "w") as fh:
        fh.write("id,success\n")
        for t in range(n_traj):
            fh.write(f"run-{t:06d},{'true' if rng.random() < 0.55 else 'false'}\n")
    return {"trajectories": n_traj, "calls": n_traj * steps, "tokens": n_tok, "bytes": path.stat().st_size,
            "labels": labels}


# ---------------------------------------------------------------- 1. cold start
def cold_start_browser(data_dir: Path, samples: Path, env: dict) -> float | None:
    chromium = chromium_path()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    port = free_port()
    with sync_playwright() as p:
        b = launch_chromium(p, chromium)
        page = b.new_page()
        t0 = time.perf_counter()
        proc = start_app(port, data_dir, samples, env)
        try:
            open_when_up(page, port, attempt_ms=2000, pause_s=0.1)
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=120_000)   # the run-set table drawn
            return time.perf_counter() - t0
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            b.close()


def cold_start_apptest(data_dir: Path, samples: Path, env: dict) -> float:
    code = ("import time; t=time.perf_counter(); from streamlit.testing.v1 import AppTest; "
            f"at=AppTest.from_file({str(APP)!r}, default_timeout=300); at.run(); "
            "assert not at.exception; print(time.perf_counter()-t)")
    env = dict(env, HTC_DATA_DIR=str(data_dir), HTC_SAMPLE_DIR=str(samples))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


# ---------------------------------------------------------------- 2. pages
def page_times(data_dir: Path, samples: Path, seeds: int) -> dict:
    from streamlit.testing.v1 import AppTest

    os.environ["HTC_DATA_DIR"] = str(data_dir)
    os.environ["HTC_SAMPLE_DIR"] = str(samples)
    at = AppTest.from_file(str(APP), default_timeout=1800)
    at.session_state["htc_seeds"] = seeds
    first, second = {}, {}
    for rnd, out in ((1, first), (2, second)):
        for page in PAGES:
            t0 = time.perf_counter()
            if page == "runs" and rnd == 1:
                at.run()
            else:
                at.switch_page(f"pages/{page}.py")
                at.run()
            out[page] = time.perf_counter() - t0
            if at.exception:
                raise RuntimeError(f"{page}: {at.exception[0].value}")
    return {"first": first, "cached": second}


# ---------------------------------------------------------------- 3. upload
def upload_to_calibration(data_dir: Path, calllog: Path, labels: Path, seeds: int) -> dict:
    from streamlit.testing.v1 import AppTest

    os.environ["HTC_DATA_DIR"] = str(data_dir)
    os.environ["HTC_SAMPLE_DIR"] = str(data_dir / "no-samples")
    at = AppTest.from_file(str(APP), default_timeout=3600)
    at.session_state["htc_seeds"] = seeds
    at.run()
    data = calllog.read_bytes()
    t0 = time.perf_counter()
    at.file_uploader(key="upload_files").set_value([(calllog.name, data, "application/json")])
    at.file_uploader(key="upload_labels").set_value((labels.name, labels.read_bytes(), "text/csv"))
    at.button[0].click()
    at.run()
    t_upload = time.perf_counter() - t0
    kept = [s.value for s in at.success]
    if at.exception or not kept:
        raise RuntimeError(f"upload failed: {[e.value for e in at.exception]} {[e.value for e in at.error]}")
    t1 = time.perf_counter()
    at.switch_page("pages/calibration.py")
    at.run()
    t_cal = time.perf_counter() - t1
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    drawn = len(at.get("plotly_chart"))
    return {"upload_s": t_upload, "calibration_s": t_cal, "total_s": time.perf_counter() - t0, "message": kept[0],
            "charts": drawn}


def upload_browser(data_dir: Path, calllog: Path, labels: Path, seeds: int, env: dict) -> dict | None:
    """The same flow in Chromium: pick the files in the uploaders, store, open Calibration; time until its
    charts are drawn (HTC-Reduced may still be computing below its progress bar)."""
    chromium = chromium_path()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    port = free_port()
    empty = data_dir / "no-samples"
    empty.mkdir(parents=True, exist_ok=True)
    proc = start_app(port, data_dir, empty, env)
    try:
        with sync_playwright() as p:
            b = launch_chromium(p, chromium)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            open_when_up(page, port, attempt_ms=3000, pause_s=0.2)
            page.get_by_role("button", name="Upload and store").wait_for(timeout=120_000)
            inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
            t0 = time.perf_counter()
            inputs.nth(0).set_input_files(str(calllog))
            inputs.nth(1).set_input_files(str(labels))
            page.get_by_text(calllog.name).first.wait_for(timeout=600_000)
            page.wait_for_function("!document.querySelector('[data-testid=\"stFileUploaderFile\"] [role=\"progressbar\"]')",
                                   timeout=600_000)
            t_sent = time.perf_counter() - t0
            page.get_by_role("button", name="Upload and store").click()
            saw_bar = False
            end = time.time() + 1800
            while time.time() < end:
                if page.locator('[data-testid="stProgress"]').count():
                    saw_bar = True
                if page.get_by_text("trajectories from 1 file(s)").count():
                    break
                page.wait_for_timeout(200)
            t_stored = time.perf_counter() - t0
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Calibration", exact=True).click()
            bar_cal = False
            end = time.time() + 1800
            while time.time() < end:
                if page.locator('[data-testid="stProgress"]').count():
                    bar_cal = True
                if page.locator(".js-plotly-plot .main-svg").count() >= 2:
                    break
                page.wait_for_timeout(200)
            t_drawn = time.perf_counter() - t0
            still = page.locator('[data-testid="stProgress"]').count() > 0
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"sent_s": t_sent, "stored_s": t_stored, "drawn_s": t_drawn, "progress_upload": saw_bar,
            "progress_calibration": bar_cal, "reduced_still_running": still}


def _calibration_only(args, argv: list) -> int:
    import logging

    from .calibration_visits import calibration_visits, serial_evaluation

    if "--alphas" in argv and args.alphas == "quick":
        os.environ["HTC_DASHBOARD_ALPHAS"] = QUICK_ALPHAS
    logging.disable(logging.WARNING)
    samples, which = sample_dir()
    tmp = Path(tempfile.mkdtemp(prefix="htc-bench-"))
    try:
        t0 = time.perf_counter()
        cold_start_apptest(tmp / "store", samples, dict(os.environ))
        print(f"sample runs: {which}; loaded into an empty store with their features in {time.perf_counter() - t0:.1f} s")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        from htc_core.app.store import Store
        from .calibration_browser import first_visit_browser

        real = first_visit_browser(tmp / "store", samples, dict(os.environ))
        if real is None:
            print("Calibration in a real server: skipped (needs Playwright and Chromium)")
        else:
            print(f"Calibration, first visit in a real server (Chromium): {real['first_s']:.2f} s after the click "
                  f"(target < 5 s idle); the Runs page before it (the app starts the evaluation in the background once a page "
                  f"is drawn): "
                  f"{real['landing_s']:.2f} s from opening the app")
            print(f"Calibration, first visit in a real server by the link /calibration (a new server, the session's "
                  f"start included): {real['direct_s']:.2f} s (target < 5 s idle)")
        Store(tmp / "store").clear_results()    # what the server's evaluation kept would be read back
        v = calibration_visits(tmp / "store", samples, APP)
        print(f"Calibration through AppTest, first visit ({v['methods']} methods, alphas {v['alphas']}, 3 CV repeats, "
              f"{v['parts_computed']} evaluation parts computed): {v['first_s']:.2f} s (target < 5 s idle), after "
              f"{v['landing_s']:.2f} s on the Runs page, where the app started the evaluation; the evaluation job took "
              f"{v['job_s']:.2f} s ({os.cpu_count()} threads)")
        print(f"the same evaluation in this process, one thread (reference): {serial_evaluation(samples):.2f} s")
        print(f"Calibration, later visit: {v['later_s']:.2f} s; reload (new session): {v['reload_s']:.2f} s; "
              f"restart (from the store): {v['restart_s']:.2f} s (target < 1 s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trajectories", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=100, help="tokens per call (mean)")
    ap.add_argument("--top-k", type=int, default=0, help="alternatives per token in the call log")
    ap.add_argument("--seeds", type=int, default=1, help="CV repeats of the evaluation")
    ap.add_argument("--alphas", choices=["paper", "quick"], default="quick",
                    help=f"alpha grid: the paper's 15 values or quick ({QUICK_ALPHAS})")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--skip-upload", action="store_true")
    ap.add_argument("--calibration-only", action="store_true",
                    help="only part 5: the Calibration page on the sample runs (paper's alphas unless --alphas quick "
                         "is given, 3 CV repeats)")
    args = ap.parse_args(argv)
    if args.calibration_only:
        return _calibration_only(args, argv or [])
    if args.alphas == "quick":
        os.environ["HTC_DASHBOARD_ALPHAS"] = QUICK_ALPHAS
    import logging

    logging.disable(logging.WARNING)
    samples, which = sample_dir()
    print(f"sample runs: {which}")
    print(f"machine: {os.cpu_count()} cores; alpha grid {args.alphas}; CV repeats {args.seeds}")
    tmp = Path(tempfile.mkdtemp(prefix="htc-bench-"))
    try:
        env = dict(os.environ)
        data = tmp / "store"
        # the first run (loads the samples into the store); not part of the cold start
        t = cold_start_apptest(data, samples, env)
        print(f"first run (sample runs loaded into the empty store): {t:.2f} s")
        cs = None if args.skip_browser else cold_start_browser(data, samples, env)
        if cs is not None:
            print(f"cold start, new server process to the Runs page drawn in Chromium: {cs:.2f} s (target <= 5 s)")
        else:
            t = cold_start_apptest(data, samples, env)
            print(f"cold start, new Python process to the Runs page run (AppTest, no browser): {t:.2f} s "
                  "(target <= 5 s)")
        times = page_times(data, samples, args.seeds)
        print("page script run time, first visit (computes and caches) / once cached (target <= 2 s):")
        for p in PAGES:
            print(f"  {p:14s} {times['first'][p]:7.2f} s   {times['cached'][p]:6.2f} s")
        if not args.skip_upload:
            log = tmp / "calllog.jsonl"
            t0 = time.perf_counter()
            counts = write_calllog(log, args.trajectories, args.steps, args.tokens, args.top_k)
            print(f"call log: {counts['trajectories']:,} trajectories, {counts['calls']:,} calls, "
                  f"{counts['tokens'] / 1e6:.2f} M tokens, top-{args.top_k} alternatives, "
                  f"{counts['bytes'] / 1e6:.0f} MB (written in {time.perf_counter() - t0:.1f} s)")
            br = None if args.skip_browser else upload_browser(tmp / "store-browser", log, counts["labels"],
                                                                  args.seeds, dict(os.environ))
            if br is not None:
                print(f"browser: files sent to the server {br['sent_s']:.1f} s; stored (read, check, store, "
                      f"features) at {br['stored_s']:.1f} s; Calibration page drawn at {br['drawn_s']:.1f} s "
                      f"(target <= 30 s); progress bar seen during upload: {br['progress_upload']}, on "
                      f"Calibration: {br['progress_calibration']}; HTC-Reduced still computing when drawn: "
                      f"{br['reduced_still_running']}")
            up = upload_to_calibration(tmp / "store-upload", log, counts["labels"], args.seeds)
            print(f"upload (read, check, store, features): {up['upload_s']:.2f} s -> {up['message']}")
            print(f"Calibration page complete, HTC-Reduced included (evaluation + {up['charts']} charts): "
                  f"{up['calibration_s']:.2f} s")
            print(f"AppTest: upload to a complete Calibration page: {up['total_s']:.2f} s")
            from htc_core.app.projection import project
            from htc_core.app.store import Store
            from htc_core.app.workspace import build_workspace

            ws = build_workspace(Store(tmp / "store-upload"))
            for method in ("umap", "tsne"):
                p = project(ws.features, method=method)
                print(f"{method.upper()} of {len(ws):,} trajectories: {p.seconds:.2f} s"
                      + (" (target <= 30 s)" if method == "umap" else " (Barnes-Hut, PCA-20, 300 iterations)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
