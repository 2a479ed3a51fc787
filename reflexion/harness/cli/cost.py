"""``reflexion cost``: what each measured run bought for what it spent, one point per results
file: the share of tasks solved (what counts as solved: the hidden tests, won games, the gold
answer) against the model tokens spent per task (prompt and completion, every role, the
shared first trial included), in one panel per benchmark, a marker per model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.plots import cost_plot
from reflexion.harness.bench.reports import outcome
from reflexion.harness.bench.usage import merge, totals
from reflexion.harness.cli.common import console
from reflexion.harness.cli.results import finals_of


@dataclass(frozen=True)
class RunCost:
    """One finished run: where it belongs and what it bought for what it spent."""

    benchmark: str
    model: str
    strategy: str
    tasks: int
    solved: float
    """Share of its finished tasks solved."""
    tokens: float
    """Mean model tokens per finished task."""


def benchmark_of(settings: dict[str, Any], path: Path) -> str:
    """The panel a run goes in: the family and its data (HumanEval, its Rust port, HotPotQA by
    agent, ALFWorld)."""
    bench = str(settings.get("bench") or "?")
    if bench == "hotpotqa":
        return f"HotPotQA {settings.get('agent', '?')}"
    if bench == "programming":
        data = Path(str(settings.get("dataset") or "humaneval")).stem
        return {"humaneval": "HumanEval", "humaneval-rs": "HumanEval-Rust"}.get(data, data)
    if bench == "alfworld":
        return "ALFWorld"
    raise ReflexionError(f"{path} is not a results file of `reflexion bench` (no bench named)")


def strategy_of(settings: dict[str, Any], path: Path) -> str:
    """The run's label: the bench's name for it, else its strategy (``resample`` for a
    question run whose retries are blind redraws, though its ``Context.strategy`` is
    ``none``), else the file's name. A programming loop's label names its retry where the
    bench's name does not (a run of ``--preset paper`` is named ``reflexion``, its retries
    ``repair``), and a question run judged by a model names its judge, so runs with different
    retries or evaluators are told apart."""
    if settings.get("strategy_name"):
        name = str(settings["strategy_name"])
        retry = settings.get("code_retry") or settings.get("retry")
        if name == "reflexion" and retry and settings.get("bench") == "programming":
            return f"{name}-{retry}"
        return name
    if "resample" in (settings.get("answer_retry"), settings.get("retry")):
        name = "resample"
    else:
        name = str(settings.get("strategy") or path.stem)
    judge = settings.get("evaluator")
    if settings.get("bench") == "hotpotqa" and judge not in (None, "exact_match"):
        return f"{name} ({judge} judge)"
    return name


def run_cost(path: Path) -> RunCost | None:
    """The run's point, or ``None`` for a file with no finished task or a task whose usage was
    not recorded (older runs; an empty record too: every task calls a model)."""
    finals = finals_of(path)
    if not finals or not all(f.get("usage") for f in finals):
        return None
    settings = finals[0].get("settings") or {}
    used = totals(merge(*(f["usage"] for f in finals)))
    model = str(settings.get("actor_model") or "?").removeprefix("local:")
    return RunCost(
        benchmark=benchmark_of(settings, path),
        model=model,
        strategy=strategy_of(settings, path),
        tasks=len(finals),
        solved=sum(outcome(f) for f in finals) / len(finals),
        tokens=(used["prompt_tokens"] + used["completion_tokens"]) / len(finals),
    )


def is_results(path: Path) -> bool:
    """Whether a JSONL file is a results file (its rows have a ``type``), not a data set or
    the side files a programming run writes beside its results."""
    if path.stem.endswith(("-samples", "-problems")):
        return False
    with path.open() as handle:
        first = handle.readline()
    try:
        row = json.loads(first)
    except ValueError:
        return False
    return isinstance(row, dict) and "type" in row


def results_files(paths: list[Path]) -> list[Path]:
    """The files given, and every results file under a folder given."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise ReflexionError(f"{path} does not exist: give results files or their folder")
        found += (
            [p for p in sorted(path.rglob("*.jsonl")) if is_results(p)] if path.is_dir() else [path]
        )
    return found


def cost(
    results: Annotated[
        list[Path],
        typer.Argument(help="Results JSONL files of `reflexion bench`, or folders of them."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="PNG to write.")] = Path(
        "cost.png"
    ),
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Also draw runs on part of a benchmark (by default a panel holds the runs "
            "that finished as many tasks as its largest, so its points share their tasks).",
        ),
    ] = False,
) -> None:
    """Plot each run's share of tasks solved against its model tokens per task, one panel per
    benchmark, and print the points."""
    files = results_files(results)
    found = [p for p in map(run_cost, files) if p is not None]
    if not found:
        raise ReflexionError("no finished run with recorded usage in the files given")
    largest: dict[str, int] = {}
    for p in found:
        largest[p.benchmark] = max(largest.get(p.benchmark, 0), p.tasks)
    points = [p for p in found if partial or p.tasks == largest[p.benchmark]]
    left = len(files) - len(points)
    if left:
        console.print(
            f"[dim]{left} file(s) left out: part of a benchmark (--partial draws them) or "
            "no usage recorded[/]"
        )
    for p in sorted(points, key=lambda p: (p.benchmark, p.model, p.tokens)):
        console.print(
            f"{p.benchmark} · {p.model} · {p.strategy}: {p.solved:.3f} solved of {p.tasks}, "
            f"{p.tokens:,.0f} tokens per task"
        )
    cost_plot([(p.benchmark, p.model, p.strategy, p.tokens, p.solved) for p in points], output)
    console.print(f"plot {output}")
