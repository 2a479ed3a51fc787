"""``reflexion perf learning-cost``: tokens and wall time per solved task, Reflexion against its
no-memory baseline, from finished results files."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from reflexion.core.context import DEFAULT_MODEL
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.ledger import load_finals
from reflexion.harness.bench.reports import outcome
from reflexion.harness.bench.usage import merge, totals
from reflexion.harness.perf.machine import JsonOpt, console, report

BASELINES = ("none", "simple")
"""Strategy labels of the baselines (HotPotQA and ALFWorld: none; programming: simple)."""


def cost_of(path: Path) -> dict[str, Any]:
    """Tokens, calls and solved tasks of one results file's finished tasks. The token figures
    count only tasks whose ``final`` line has ``usage`` (older runs recorded none)."""
    finals = load_finals(path)
    settings = finals[0].get("settings") or {}
    bench = str(settings.get("bench") or "hotpotqa")
    strategy = str(settings.get("strategy_name") or settings.get("strategy") or "?")
    run = " ".join(str(settings[k]) for k in ("bench", "agent", "language") if settings.get(k))
    model = str(settings.get("actor_model") or "?")
    counted = [f for f in finals if isinstance(f.get("usage"), dict)]
    used = totals(merge(*(f["usage"] for f in counted)))
    solved_counted = sum(outcome(f) for f in counted)
    tokens = used["prompt_tokens"] + used["completion_tokens"]
    return {
        "file": str(path),
        "bench": bench,
        "run": run or bench,
        "model": model,
        "evaluator": settings.get("evaluator"),
        "strategy": strategy,
        "baseline": strategy in BASELINES,
        "tasks": len(finals),
        "solved": sum(outcome(f) for f in finals),
        "with_usage": len(counted),
        "calls": used["calls"],
        "prompt_tokens": used["prompt_tokens"],
        "completion_tokens": used["completion_tokens"],
        "tokens": tokens,
        "tokens_per_task": round(tokens / len(counted), 1) if counted else None,
        "tokens_per_solved": round(tokens / solved_counted, 1) if solved_counted else None,
    }


def learning_cost_figures(files: list[Path]) -> list[dict[str, Any]]:
    """One row per file, with tokens per solved task relative to the baseline of its group
    (same benchmark, agent or language, evaluator and model)."""
    rows = [cost_of(p) for p in files]

    def group(r: dict[str, Any]) -> tuple[str, str, str]:
        return r["run"], r["model"], str(r["evaluator"])

    base = {group(r): r for r in rows if r["baseline"]}
    for r in rows:
        b = base.get(group(r))
        ours, theirs = r["tokens_per_solved"], b["tokens_per_solved"] if b else None
        r["vs_baseline"] = (
            round(ours / theirs, 3) if ours and theirs and not r["baseline"] else None
        )
    return rows


RUN_SLICE: dict[str, str] = {
    "hotpotqa-none": "hotpotqa --agent cot-gt --limit 10 --trials 3 --strategy none",
    "hotpotqa-reflexion": "hotpotqa --agent cot-gt --limit 10 --trials 3 --strategy reflexion",
    "programming-simple": "programming --dataset humaneval --limit 10 --loop simple",
    "programming-reflexion": (
        "programming --dataset humaneval --limit 10 --loop reflexion --max-iters 3"
    ),
    "alfworld-none": "alfworld --limit 2 --trials 3 --strategy none",
    "alfworld-reflexion": "alfworld --limit 2 --trials 3 --strategy reflexion",
}
"""The fixed slice ``learning-cost --run`` runs: name → ``reflexion bench`` arguments."""


def run_slice(out_dir: Path, model: str) -> list[Path]:
    """Run the fixed slice with ``reflexion bench`` (each strategy in a file of its own under
    ``out_dir``; a rerun resumes); ALFWorld only when its engine is installed."""
    from reflexion.alfworld.env import engine_available

    files = []
    for name, args in RUN_SLICE.items():
        if name.startswith("alfworld") and not engine_available():
            console.print(f"[dim]skipping {name}: the alfworld extra is not installed[/]")
            continue
        out = out_dir / f"{name}.jsonl"
        command = [
            sys.executable,
            "-m",
            "reflexion",
            "bench",
            *shlex.split(args),
            "--model",
            model,
            "--output",
            str(out),
            "--plot",
            str(out.with_suffix(".png")),
            "--db",
            str(out_dir / "checkpoints.sqlite"),
        ]
        console.print("[bold]$[/] " + escape(shlex.join(["reflexion", *command[3:]])))
        if subprocess.run(command, check=False).returncode != 0:
            raise ReflexionError(f"the benchmark {name} failed (see above); rerun to resume it")
        files.append(out)
    return files


def learning_cost(
    results: Annotated[
        list[Path] | None,
        typer.Argument(help="Results JSONL files of finished `reflexion bench` runs."),
    ] = None,
    run: Annotated[
        bool,
        typer.Option(
            "--run",
            help="First run a fixed small slice: HotPotQA CoT (GT) 10 questions none vs "
            "reflexion (3 trials), HumanEval 10 problems simple vs reflexion (3 iterations), "
            "ALFWorld 2 games none vs reflexion (3 trials, if the engine is installed).",
        ),
    ] = False,
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model of the --run slice.")
    ] = DEFAULT_MODEL,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Where --run writes its results files.")
    ] = Path("runs") / "perf",
    json_path: JsonOpt = None,
) -> None:
    """Tokens per solved task, baseline against Reflexion, from the usage recorded on the
    results lines of finished benchmark runs."""
    files = list(results or [])
    if run:
        files += run_slice(out_dir, model)
    if not files:
        raise ReflexionError("give results files of `reflexion bench`, or --run to make them")
    rows = learning_cost_figures(files)
    table = Table(
        Column("run", no_wrap=True),
        "strategy",
        "tasks",
        "solved",
        "calls",
        "tokens",
        "tok/task",
        "tok/solved",
        "vs base",
        title="learning cost: tokens per solved task",
    )
    for r in rows:
        table.add_row(
            escape(r["run"]),
            r["strategy"],
            str(r["tasks"]),
            str(r["solved"]),
            f"{r['calls']:,}",
            f"{r['tokens']:,}" if r["with_usage"] else "-",
            f"{r['tokens_per_task']:,.0f}" if r["tokens_per_task"] is not None else "-",
            f"{r['tokens_per_solved']:,.0f}" if r["tokens_per_solved"] else "-",
            f"{r['vs_baseline']:.2f}x" if r["vs_baseline"] else "-",
        )
    missing = sum(r["tasks"] - r["with_usage"] for r in rows)
    models = sorted({r["model"] for r in rows})
    table.caption = (
        f"model {', '.join(models)}; tokens = prompt + completion tokens the models reported, "
        "over all tasks, solved or not; vs base = tokens per solved task over the baseline's "
        "(none; simple for programming) with the same benchmark, agent, model and evaluator"
        + (
            f"; {missing} task(s) have no usage recorded (older runs), not counted"
            if missing
            else ""
        )
    )
    settings = {"files": [str(f) for f in files], "run": run, "model": model if run else None}
    report("learning-cost", [table], {"runs": rows}, settings, json_path)
