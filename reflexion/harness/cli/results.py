"""Commands on finished results files: ``plot`` (learning curves in one PNG) and ``compare``
(runs paired task by task with a baseline)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

import typer

from reflexion.harness.bench.family_tables import (
    accepted_table,
    code_summary,
    gains_by_attempt,
    truth_curve,
)
from reflexion.harness.bench.ledger import load_finals
from reflexion.harness.bench.plots import learning_curve
from reflexion.harness.bench.reports import compare_table, outcome, outcome_table, slices_table
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import console


def finals_of(path: Path) -> list[dict[str, Any]]:
    """The finished tasks of a results file (:func:`~reflexion.harness.bench.ledger.load_finals`); a
    line that is not JSON is named in a note (a crash cuts at most the line being written; more
    means damage worth a look)."""
    malformed: list[int] = []
    finals = load_finals(path, malformed)
    if malformed:
        shown = ", ".join(map(str, malformed[:5])) + (" …" if len(malformed) > 5 else "")
        console.print(
            f"[yellow]note:[/] {path}: {len(malformed)} line(s) not JSON, skipped (line {shown})"
        )
    return finals


def plot_results(
    results: Annotated[
        list[Path], typer.Argument(help="Results JSONL files of `reflexion bench`.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="PNG to write.")] = Path(
        "learning-curve.png"
    ),
) -> None:
    """Draw the learning curves of finished benchmark runs in one PNG (one line per file), on
    what counts as solved: hidden tests, won games, or the gold answer where an LLM judged."""
    curves: dict[str, list[float]] = {}
    for path in results:
        finals = finals_of(path)
        settings = finals[0].get("settings", {})
        label = f"{settings.get('agent', path.stem)} {settings.get('strategy', '')}".strip()
        if label in curves:
            label = f"{label} ({path.stem})"
        trials = int(settings.get("max_trials") or max(len(f["evaluations"]) for f in finals))
        curves[label] = truth_curve(finals, trials)
        console.print(
            f"{label}: {len(finals)} task(s), " + " ".join(f"{v:.2f}" for v in curves[label])
        )
    learning_curve(curves, output)
    console.print(f"learning curve {output}")


def run_labels(paths: list[Path]) -> list[str]:
    """Short names for results files, so a table at 80 columns shows what differs: the variant
    part of each name (before the first ``__``) less the words all of them start with
    ("alfworld-heuristic-"), and, where two files share that, the ``field=value`` parts not
    every file has; the whole paths where two labels would still be the same."""
    parts = [path.stem.split("__") for path in paths]
    heads = [p[0] for p in parts]
    shared = heads[0] if len(heads) > 1 else ""
    for head in heads[1:]:
        while not head.startswith(shared):
            shared = shared[:-1]
    cut = shared.rfind("-") + 1 if len(set(heads)) > 1 else 0
    common = set.intersection(*(set(p[1:]) for p in parts)) if len(parts) > 1 else set()
    if len(parts) == 1:
        common = set(parts[0][1:])
    short = [head[cut:] or head for head in heads]
    if len(set(short)) == len(short):
        return short
    labels = [
        " ".join([head, *(t for t in p[1:] if t not in common)])
        for head, p in zip(short, parts, strict=True)
    ]
    if len(set(labels)) < len(labels):
        return [str(path) for path in paths]
    return labels


def compare_results(
    baseline: Annotated[Path, typer.Argument(help="Results JSONL of the baseline run.")],
    others: Annotated[
        list[Path], typer.Argument(help="Results JSONL files of the runs to compare with it.")
    ],
    slices: Annotated[
        int | None,
        opt.count_option(
            "--slices",
            help="Also compare slice by slice: the baseline's tasks in its file's order, "
            "N at a time.",
        ),
    ] = None,
    chain: Annotated[
        bool,
        typer.Option(
            "--chain",
            help="Pair each run with the one before it (a decomposition: simple, resample, "
            "--no-reflection, reflexion), not every run with the first.",
        ),
    ] = False,
) -> None:
    """Compare finished benchmark runs task by task with a baseline run: the tasks each
    solved that the other did not and the exact McNemar p-value (HotPotQA: solved; programming:
    the hidden tests; ALFWorld: won), then each run's outcomes and model usage (programming:
    the attempt where each difference ends, pass@1, right first attempts broken, Table 2, and
    the accepted answers' evidence)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    paths = [baseline, *others]
    for path, label in zip(paths, run_labels(paths), strict=True):
        runs[label] = finals_of(path)
    labels = list(runs)
    code = all("hidden_pass" in f for finals in runs.values() for f in finals)
    pairs = (
        [({before: runs[before], after: runs[after]}, before) for before, after in pairwise(labels)]
        if chain
        else [(runs, labels[0])]
    )
    by_attempt = code and all("pass_by_iteration" in f for fs in runs.values() for f in fs)
    for paired_runs, base in pairs:
        console.print(compare_table(paired_runs, base))
        if by_attempt:
            console.print(gains_by_attempt(paired_runs, base))
    if code:
        console.print(code_summary(runs))
        console.print(accepted_table(runs))
    console.print(outcome_table(runs, {}, outcome, "tasks"))
    if slices is not None:
        console.print(slices_table(runs, next(iter(runs)), slices))
