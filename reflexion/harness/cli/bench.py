"""The one path every ``reflexion bench`` command runs: each variant (a strategy with its
context) gets a results file named by its settings (:mod:`reflexion.harness.bench.naming`),
tasks that resume or fork a shared first trial, a progress bar with a line per trial, and a row
in the summary.

A task family adds a :class:`Family` (how its tasks look and print) and a command that turns its
options into :class:`Variant` s; :func:`run_variants` does the rest.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.graph import StateGraph
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.driver import Finalize, Graph, ServerGraph, run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink, finished_tasks
from reflexion.harness.bench.naming import run_name, same_run, thread_key
from reflexion.harness.bench.settings import first_trial_key
from reflexion.harness.cli import options as opt
from reflexion.harness.cli.common import (
    compile_agent,
    console,
    local_db,
    open_output,
    print_trial,
    resolve_models,
)
from reflexion.harness.cli.options import STRATEGIES, choice
from reflexion.harness.persistence import open_checkpointer
from reflexion.models.transport import current_transport

Printer = Callable[[dict[str, Any], str], None]
Results = dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class Task:
    """One task of a family, before it is given a thread."""

    task_id: str
    input: dict[str, Any]
    label: str
    """Rich markup that starts its lines."""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """What the shared path needs to know about a task family."""

    name: str
    """Prefix of its thread ids and results files (``hotpotqa``, ``programming``, …)."""
    unit: str
    """What its tasks are called in messages (``questions``, ``problems``, ``games``)."""
    tasks: list[Task]
    print_trial: Printer = print_trial
    print_final: Printer | None = None


@dataclass
class Variant:
    """One run over the family's tasks: a strategy's context and the settings that name its
    results file and threads."""

    label: str
    """Its row in the tables and its line in the plot."""
    agent: str
    """The graph that runs it (a name in :data:`reflexion.harness.agents.AGENTS`)."""
    ctx: Context
    settings: dict[str, Any]
    file_stem: str
    """The results file's name before the settings key."""
    header: str
    """The line printed before the run starts."""
    finalize: Finalize | None = None
    """Adds family fields (hidden-test verdicts, episodes, …) to a finished task's row."""
    build: Callable[[], StateGraph[Any, Any, Any, Any]] | None = None
    """The graph's builder, where it is not one of the agents' (your own, ``bench tasks``)."""


@dataclass(frozen=True)
class Where:
    """Where and how a bench runs its variants: the thread database, a LangGraph server (the
    threads then live there), tasks at once, and a results file to use."""

    db: str
    server: str | None = None
    concurrency: int = 1
    output: Path | None = None


@dataclass
class Outcome:
    """What :func:`run_variants` hands back for the reports."""

    results: Results = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def report_errors(errors_by: dict[str, int], unit: str) -> None:
    """One red line when tasks ended with an error (a rerun retries them)."""
    count = sum(errors_by.values())
    if count:
        console.print(
            f"[red]{count} {unit}(s) failed with an error[/] (see the 'error' lines); "
            "rerun the same command to retry them"
        )


def mean_wall(finals: list[dict[str, Any]], digits: int = 1) -> str:
    """The mean wall time of the tasks this run ran whole (a resumed task's line covers only
    its last part), or ``-``."""
    walls = [f["wall_s"] for f in finals if not f.get("resumed")]
    return f"{sum(walls) / len(walls):.{digits}f}s" if walls else "-"


def strategies_of(
    value: str, allowed: tuple[str, ...] = STRATEGIES, option: str = "--strategy"
) -> list[str]:
    """The names of a comma-separated ``--strategy`` (or ``option``: ``bench programming``'s
    ``--loop``), checked, each once, in order."""
    names = [s.strip() for s in value.split(",") if s.strip()]
    if not names:
        raise ReflexionError(f"{option} is empty: give one or more of " + ", ".join(allowed))
    for name in names:
        choice(name, allowed, option)
    return list(dict.fromkeys(names))


def run_with_progress(
    graph: Graph,
    tasks: list[BenchTask],
    variant: Variant,
    sink: Sink,
    family: Family,
    concurrency: int,
    done: dict[str, dict[str, Any]],
    *,
    server: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run one variant under a progress bar, printing each event with the family's printers;
    with ``server``, every task runs on that LangGraph server
    (:mod:`reflexion.harness.bench.remote`)."""
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(family.unit, total=len(tasks))

        def emit(event: str, task: BenchTask, payload: dict[str, Any]) -> None:
            if event == "trial":
                family.print_trial(payload, task.label)
            elif event == "reflection":
                console.print(f"{task.label}  [cyan]reflection:[/] {escape(payload['text'])}")
            elif event == "error":
                console.print(f"{task.label}[red]error:[/] {escape(payload['error'])}")
                progress.advance(bar)
            elif event in ("final", "skipped"):
                if event == "final" and family.print_final is not None:
                    family.print_final(payload, task.label)
                progress.advance(bar)

        graph_id = AGENTS[variant.agent].graph_id if variant.agent in AGENTS else variant.agent
        target = graph if server is None else ServerGraph(server, graph_id)
        return run_benchmark(
            target,
            tasks,
            variant.ctx,
            sink,
            settings=variant.settings,
            concurrency=concurrency,
            done=done,
            emit=emit,
            metadata={"agent": variant.agent},
            finalize=variant.finalize,
        )


def check_output(output: Path | None, names: list[str], what: str = "strategy") -> None:
    """``--output`` names one file, so it takes one strategy (``what``: one loop)."""
    if output is not None and len(names) > 1:
        raise ReflexionError(f"--output takes one {what}: drop it to name files automatically")


def run_variants(
    family: Family,
    variants: list[Variant],
    where: Where,
    *,
    paired: bool,
    after: Callable[[Variant, list[dict[str, Any]], Path], None] | None = None,
    output_dir: Path = Path("runs"),
) -> Outcome:
    """Run every variant in turn over the family's tasks (its results file in
    ``output_dir``, unless ``where.output`` names one). A rerun of the same command skips
    finished tasks and resumes unfinished ones; with ``paired``, a variant that runs more than
    one trial forks each task's shared first trial (see :func:`first_trial_key`)."""
    outcome = Outcome()
    if where.server is not None and current_transport().base_url is not None:
        console.print(
            "[yellow]note:[/] on --server the server reaches the models as its environment "
            "says (REFLEXION_BASE_URL there); --base-url only names this run's settings"
        )
    with open_checkpointer(local_db(where.db, where.server)) as saver:
        graphs: dict[str, Graph] = {}
        for variant in variants:
            graph = graphs.get(variant.agent) or (
                variant.build().compile(checkpointer=saver)
                if variant.build is not None
                else compile_agent(saver, variant.agent)
            )
            graphs[variant.agent] = graph
            settings = variant.settings
            base = first_trial_key(settings) if paired and variant.ctx.max_trials > 1 else None
            if base:
                settings["paired"] = True
            name = run_name(variant.file_stem, settings)
            key = thread_key(name)
            out = where.output or output_dir / f"{name}.jsonl"
            outcome.files[variant.label] = out
            done = finished_tasks(out)
            tasks = [
                BenchTask(
                    thread_id=f"{family.name}-{key}-{task.task_id}",
                    input=task.input,
                    label=task.label,
                    meta={"task_id": task.task_id, **task.meta},
                    fork_from=f"{family.name}-{base}-{task.task_id}" if base else None,
                )
                for task in family.tasks
            ]
            fresh = not out.exists()
            with open_output(out) as handle:
                if where.server is None and any(t.thread_id not in done for t in tasks):
                    try:
                        resolve_models(variant.ctx)
                    except ReflexionError:  # a bad model string leaves no empty results file
                        if fresh:
                            handle.close()
                            out.unlink(missing_ok=True)
                        raise
                if any(not same_run(f.get("settings") or {}, settings) for f in done.values()):
                    raise ReflexionError(
                        f"{out} holds a run with other settings: give another --output (or "
                        "none, and the file is named after the settings), so the runs stay apart"
                    )
                console.print(f"{variant.header} · concurrency={where.concurrency} → {out}")
                finals, errors = run_with_progress(
                    graph,
                    tasks,
                    variant,
                    Sink(handle),
                    family,
                    where.concurrency,
                    done,
                    server=where.server,
                )
            outcome.results[variant.label] = finals
            outcome.errors[variant.label] = len(errors)
            if after is not None:
                after(variant, finals, out)
    return outcome


def default_plot(plot: Path | None, outcome: Outcome, stem: str) -> Path:
    """``--plot``, or a PNG beside the results named by the runs it draws."""
    if plot is not None:
        return plot
    files = list(outcome.files.values())
    key = thread_key("\n".join(str(f) for f in files))
    return files[0].with_name(f"{stem}-{key}.png")


ROLES = ("reflector", "evaluator")
"""The roles ``--role-model`` gives a model of their own (the actor's is ``--model``)."""


@dataclass(frozen=True)
class Common:
    """The options every bench command takes, as :func:`common_options` hands them over."""

    where: Where
    plot: Path | None
    role_models: list[str] | None = None
    preset: opt.PresetFields = field(default_factory=dict)
    """``--preset``'s fields that no option of the command sets, by context class
    (:func:`opt.preset_options`)."""

    def apply(self, ctx: opt.C) -> opt.C:
        """``ctx`` with ``--preset`` (the fields no option of the command sets) and each
        ``--role-model ROLE=MODEL`` applied."""
        ctx = opt.with_preset(ctx, self.preset)
        for given in self.role_models or []:
            role, sep, model = given.partition("=")
            role = role.strip()
            if not sep or role not in ROLES or not model.strip():
                raise ReflexionError(
                    f"--role-model '{given}' is not ROLE=MODEL with ROLE one of "
                    f"{', '.join(ROLES)}: write e.g. reflector=local:qwen2.5-coder-1.5b"
                )
            if role == "reflector":
                ctx = replace(ctx, reflector_model=model.strip())
            else:
                ctx = replace(ctx, evaluator_model=model.strip())
        return ctx

    def run(
        self,
        family: Family,
        variants: list[Variant],
        *,
        paired: bool,
        after: Callable[[Variant, list[dict[str, Any]], Path], None] | None = None,
    ) -> Outcome:
        """:func:`run_variants` where these options say."""
        return run_variants(family, variants, self.where, paired=paired, after=after)

    def plot_path(self, outcome: Outcome, stem: str) -> Path:
        """``--plot``, or a PNG beside the results (:func:`default_plot`)."""
        return default_plot(self.plot, outcome, stem)


def common_options(plot_help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a bench command the options they all take. Its parameter ``common`` stands, in its
    signature and so in ``--help``, for --concurrency, --output, --plot (described by
    ``plot_help``), --db, --server, --role-model and --preset; the command gets their values as
    one :class:`Common`, and ``--preset`` also sets the defaults of the command's options that
    set a preset's field (:data:`opt.PRESET_OPTIONS`: an option given on the command line
    wins)."""
    shared: list[tuple[str, Any, Any]] = [
        ("concurrency", opt.ConcurrencyOpt, 1),
        ("output", opt.OutputOpt, None),
        ("plot", Annotated[Path | None, typer.Option("--plot", help=plot_help)], None),
        ("db", opt.DbOpt, opt.DEFAULT_DB),
        ("server", opt.ServerOpt, None),
        ("role_models", opt.RoleModelOpt, None),
        ("preset", opt.PresetOpt, "default"),
    ]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != "common":
                params.append(param)
                continue
            params += [
                inspect.Parameter(name, param.kind, default=default, annotation=annotation)
                for name, annotation, default in shared
            ]

        @functools.wraps(command)
        def with_common(**values: Any) -> None:
            where = Where(**{f.name: values.pop(f.name) for f in fields(Where)})
            preset = opt.preset_options(values.get("cli"), values, values.pop("preset"))
            common = Common(
                where,
                plot=values.pop("plot"),
                role_models=values.pop("role_models"),
                preset=preset,
            )
            command(**values, common=common)

        # Typer reads the options from the signature and the type hints.
        with_common.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_common.__annotations__ = {p.name: p.annotation for p in params} | {
            "return": signature.return_annotation
        }
        return with_common

    return decorate
