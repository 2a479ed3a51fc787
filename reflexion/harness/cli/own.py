"""``reflexion bench tasks``: does the loop help on *your* task, with *your* model? A paired
comparison of ``none`` (one attempt), ``resample`` (as many attempts as ``reflexion``, drawn
blind, the evaluator choosing) and ``reflexion`` on a task file, with the graph and model you
name (:mod:`reflexion.harness.bench.own_tasks`). A rerun of the same command resumes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.core.context import DEFAULT_MODEL, Context
from reflexion.core.errors import ReflexionError
from reflexion.core.steps import Node
from reflexion.harness.bench.naming import thread_key
from reflexion.harness.bench.own_tasks import SERVED, Row, comparison, load_graph, load_tasks
from reflexion.harness.bench.reports import compact, table
from reflexion.harness.bench.settings import result_settings
from reflexion.harness.cli import bench as run
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import console, one_model_context
from reflexion.harness.scoring.reference import gold_scorer

GRAPH_DEFAULT = "Default: the graph's own (its context's default)."

DB = "runs/tasks.sqlite"
"""Where ``bench tasks`` keeps its threads by default."""

TASKS_HELP = (
    "JSONL, one task per line: task (required), passages, reference and task_id (optional). "
    "A task with a reference is scored on it, whatever the graph's evaluator."
)

STRATEGIES = {"resample": "none", "reflexion": "reflexion"}
"""The two runs, by label, with the ``Context.strategy`` each runs (``none`` with more than one
trial draws every retry blind, from the first trial's prompt)."""


@dataclass
class Measured:
    """What :func:`measure_loop` found: one row per strategy, and the results files."""

    rows: list[Row]
    files: dict[str, Path]
    errors: dict[str, int]


def answering_model(graph: Any) -> str | None:
    """The model that answers in ``graph`` (a graph of ``create_reflexion_graph``, compiled
    or its builder) where its actor brings its own: a chat model's name, a ``provider:model``
    string as given, a Runnable's chat model or name, a function's name. ``None`` where the
    actor reads ``Context.actor_model`` (the served graphs, an actor given no model)."""
    builder = getattr(graph, "builder", graph)
    spec = getattr(builder, "nodes", {}).get("actor")
    node = getattr(spec, "runnable", None)
    node = getattr(node, "__wrapped__", node)  # metered (reflexion.core.budget)
    model = getattr(node, "model", None) if isinstance(node, Node) else None
    return model if isinstance(model, str) else None


def measure_loop(
    tasks: Path | str,
    graph: str = "reflexion",
    *,
    context: Context | None = None,
    db: str = DB,
    output_dir: Path | str = "runs",
    concurrency: int = 1,
    limit: int | None = None,
) -> Measured:
    """Run ``none``, ``resample`` and ``reflexion`` on your task file, paired task by task,
    and compare them (:class:`~reflexion.harness.bench.own_tasks.Row` per strategy).

    ``graph`` is ``reflexion``, another served graph id, or ``file.py:name`` /
    ``package.module:name`` (a graph made by ``create_reflexion_graph``, or any graph with
    its state contract). ``context`` gives the budget and the models (``max_trials``, at
    least 2, ``actor_model``…; the graph's defaults otherwise); its ``strategy`` is set per
    run. The threads are kept in ``db`` and the results files in ``output_dir``, so a second
    call with the same arguments resumes where the first stopped. The files are named after the
    model that answers: the graph's own where its actor brings one
    (:func:`answering_model`), else ``actor_model``. A task with a
    ``reference`` is solved when its answer matches it, whatever the evaluator; the
    evaluator's verdict is kept beside (``solved`` in the files, ``Row.accepted``)."""
    path = Path(tasks)
    loaded = load_tasks(path)[:limit]
    build = load_graph(graph)
    schema = build().context_schema or Context
    base = context if context is not None else schema()
    answered = answering_model(build()) or base.actor_model
    if base.max_trials < 2:
        raise ReflexionError("max_trials is 1: give 2 or more, so resample and reflexion retry")
    key = thread_key(f"{graph}\n{path.resolve()}")
    variants = []
    for label, strategy in STRATEGIES.items():
        ctx = replace(base, strategy=strategy)
        settings = {
            "bench": "tasks",
            "graph": graph,
            "strategy_name": label,
            **result_settings(ctx),
            "actor_model": answered,
            "dataset": str(path),
        }
        variants.append(
            run.Variant(
                label,
                graph if graph in SERVED else f"own-{key}",
                ctx,
                settings,
                f"tasks-{label}",
                f"{path.name} · {label} · trials={ctx.max_trials} · model={answered} · "
                f"{len(loaded)} task(s)",
                finalize=gold_scorer(),
                build=build,
            )
        )
    family = run.Family(
        "tasks",
        "tasks",
        [
            run.Task(
                t["task_id"],
                {k: t[k] for k in ("task", "passages", "reference", "task_id") if k in t},
                f"[bold]{t['task_id']}[/] ",
                {"reference": t.get("reference")},
            )
            for t in loaded
        ],
    )
    where = run.Where(db=db, concurrency=concurrency)
    outcome = run.run_variants(family, variants, where, paired=True, output_dir=Path(output_dir))
    if not all(outcome.results.values()):
        run.report_errors(outcome.errors, "task")
        raise ReflexionError("a run finished no task: see the errors above, then rerun")
    return Measured(comparison(outcome.results, outcome.files), outcome.files, outcome.errors)


def bench_tasks(
    cli: typer.Context,
    tasks: Annotated[Path, typer.Argument(help=TASKS_HELP, show_default=False)],
    graph: Annotated[
        str,
        typer.Option(
            "--graph",
            help="reflexion (the generic graph), reflexion_qa, reflexion_qa_cot, "
            "reflexion_react, or file.py:name / package.module:name of your own graph "
            "(create_reflexion_graph, or any graph with its state contract).",
        ),
    ] = "reflexion",
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            show_default=False,
            help="provider:model for actor, evaluator and reflector (default: the embedded "
            "0.5B model). A graph of --graph whose actor brings its own model keeps it for the "
            "actor, and the results files are named after that model.",
        ),
    ] = DEFAULT_MODEL,
    trials: Annotated[int | None, opt.count_option("--trials", "-t", help=GRAPH_DEFAULT)] = None,
    memory: Annotated[
        int | None, opt.count_option("--memory", "-k", min=0, help="Ω. " + GRAPH_DEFAULT)
    ] = None,
    evaluator: Annotated[
        str | None,
        typer.Option("--evaluator", help="exact_match | llm | agreement. " + GRAPH_DEFAULT),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", metavar="T", help=GRAPH_DEFAULT)
    ] = None,
    repeat_guard: Annotated[
        int | None,
        opt.count_option(
            "--repeat-guard",
            min=0,
            max=10,
            help="Redraws of an answer that repeats one already rejected; 0 keeps the repeat. "
            + GRAPH_DEFAULT,
        ),
    ] = None,
    base_url: opt.BaseUrlOpt = None,
    limit: Annotated[
        int | None, opt.count_option("--limit", "-n", help="How many tasks (default: all).")
    ] = None,
    db: Annotated[
        str,
        typer.Option(
            "--db",
            help="Where threads are kept: a SQLite file, a postgresql:// connection string "
            "(postgres extra), or :memory: to keep them in this process only.",
        ),
    ] = DB,
    output_dir: Annotated[
        Path,
        typer.Option("--output-dir", help="Where the two results files go (resample, reflexion)."),
    ] = Path("runs"),
    concurrency: opt.ConcurrencyOpt = 1,
) -> None:
    """Compare none, resample and reflexion on your own tasks: solved (on the reference where a
    task has one), what the evaluator accepted, +/- against none and against resample with the
    exact McNemar p, and tokens and seconds per solved task."""
    schema = load_graph(graph)().context_schema or Context
    given = {
        name: value
        for name, value in (
            ("max_trials", trials),
            ("memory_size", memory),
            ("evaluator", evaluator),
            ("temperature", temperature),
            ("repeat_guard", repeat_guard),
        )
        if value is not None
    }
    ctx = one_model_context(schema, model, base_url, **given)
    opt.check_memory(ctx.memory_size, ctx.max_trials, given=memory is not None)
    measured = measure_loop(
        tasks,
        graph,
        context=ctx,
        db=db,
        output_dir=output_dir,
        concurrency=concurrency,
        limit=limit,
    )
    console.print(comparison_table(measured.rows))
    run.report_errors(measured.errors, "task")
    console.print(f"results in {', '.join(str(f) for f in measured.files.values())}")


def _vs(p: Any) -> str:
    return f"+{p.fixed}/−{p.broken} (p {p.p_value:.2g})" if p is not None else "-"


def _per(total: float | None, row: Row, unit: str) -> str:
    value = row.per_solved(total)
    if value is None:
        return "-"
    return compact(round(value)) if unit == "tokens" else f"{value:.1f}s"


def comparison_table(rows: list[Row]) -> Table:
    """The paired comparison as a table (:func:`~reflexion.harness.bench.own_tasks.comparison`)."""
    out = table(
        "strategy",
        "solved",
        "evaluator\naccepted",
        "vs none\n+/− (p)",
        "vs resample\n+/− (p)",
        "tokens per\nsolved",
        "seconds per\nsolved",
        title="paired on every task's first attempt: none is that attempt alone, resample "
        "redraws blind and keeps what the evaluator accepts, reflexion retries with its "
        "reflections. solved: on the reference where a task has one, else the evaluator's "
        "verdict. +/−: tasks one solved and the other did not; p: exact McNemar",
    )
    for row in rows:
        out.add_row(
            row.strategy,
            f"{row.solved}/{row.tasks}",
            f"{row.accepted}/{row.tasks}",
            _vs(row.against_none),
            _vs(row.against_resample),
            _per(row.tokens, row, "tokens"),
            _per(row.seconds, row, "seconds"),
        )
    return out
