"""What the commands do alike: the console, contexts from options, models loaded up front,
the thread database, and the results file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO, get_args

from langgraph.checkpoint.base import BaseCheckpointSaver
from rich.console import Console
from rich.markup import escape

from reflexion.core.context import Context, EvaluatorKind
from reflexion.core.errors import ReflexionError
from reflexion.harness.agents import AGENTS
from reflexion.harness.bench.driver import Graph
from reflexion.harness.cli.options import STRATEGIES, C, check_memory, choice
from reflexion.harness.persistence import MEMORY, parse_target
from reflexion.models.transport import current_transport, set_transport
from reflexion.nodes.common import resolve_model
from reflexion.qa.context import QAContext, ReActContext, WikiKind

QA_EVALUATORS: tuple[EvaluatorKind, ...] = get_args(EvaluatorKind)
"""The evaluators a question-answering run takes: every one of the base context's."""

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def qa_context(
    agent: str,
    model: str,
    trials: int,
    memory: int,
    strategy: str,
    evaluator: str,
    temperature: float,
    base_url: str | None,
    *,
    wiki: str = "offline",
    corpus: str | None = None,
    max_steps: int = 6,
    memory_given: bool = True,
) -> QAContext | ReActContext:
    """The context of a question-answering run of ``agent`` (its graph's class: ReAct's takes
    the Wikipedia, the corpus and the steps; the chain-of-thought agents' do not read them).
    Its models are not loaded here: :func:`resolve_models` does that once the run starts."""
    strategy = choice(strategy, STRATEGIES, "--strategy")
    evaluator = choice(evaluator, QA_EVALUATORS, "--evaluator")
    wiki = choice(wiki, get_args(WikiKind), "--wiki")
    check_memory(memory, trials, given=memory_given)
    if corpus is not None and not Path(corpus).is_file():
        raise ReflexionError(
            f"corpus file {corpus} does not exist: check the path given to --corpus"
        )
    common = dict(
        max_trials=trials,
        memory_size=memory,
        strategy=strategy,
        evaluator=evaluator,
        temperature=temperature,
    )
    ctx: QAContext | ReActContext
    if agent == "react":
        ctx = one_model_context(
            ReActContext,
            model,
            base_url,
            **common,
            wiki=wiki,
            corpus=corpus,
            max_steps=max_steps,
        )
    else:
        ctx = one_model_context(QAContext, model, base_url, **common)
    return ctx


def one_model_context(schema: type[C], model: str, base_url: str | None, **fields: Any) -> C:
    """A context of the graph's class ``schema`` whose actor, evaluator and reflector all run
    ``model`` (what ``--model`` means), with the other fields given; ``--base-url`` (when
    given) sets the process's transport, which every model of the run is reached through."""
    if base_url is not None:
        set_transport(replace(current_transport(), base_url=base_url))
    return schema(
        actor_model=model,
        evaluator_model=model,
        reflector_model=model,
        **fields,
    )


def resolve_models(ctx: Context) -> None:
    """Load the models now: a bad string, missing package or key fails before any work."""
    roles = [(ctx.actor_model, ctx.temperature, "actor")]
    # A role given its own model is loaded (so checked) even where it may go unused.
    if ctx.evaluator in ("llm", "agreement") or ctx.evaluator_model != ctx.actor_model:
        roles.append((ctx.evaluator_model, 0.0, "evaluator"))
    if (ctx.uses_reflections and ctx.memory_size > 0) or ctx.reflector_model != ctx.actor_model:
        roles.append((ctx.reflector_model, 0.0, "reflector"))
    for spec, temperature, role in roles:
        # As the nodes build it (the same cached object, the transport's retries included).
        resolve_model(None, spec, ctx, temperature=temperature, role=role)


def where(db: str) -> str:
    """``--db`` as messages show it (a connection string without its password)."""
    return str(parse_target(db))


def require_db(db: str) -> None:
    """Inspecting commands: a SQLite file that does not exist holds no threads (and is not
    created); a PostgreSQL database is checked by connecting."""
    if parse_target(db).missing():
        raise ReflexionError(f"thread database {db} does not exist: pass --db PATH")


def compile_agent(saver: BaseCheckpointSaver[Any] | None, agent: str) -> Graph:
    """The agent's graph with the thread database."""
    return AGENTS[agent].build().compile(checkpointer=saver, name=f"reflexion-{agent}")


def local_db(db: str, server: str | None) -> str:
    """The checkpointer target of a bench: ``--db``, or an in-memory one with ``--server``
    (the threads then live on the server, so ``--db`` is neither opened nor created)."""
    return MEMORY if server is not None else db


def open_output(path: Path) -> TextIO:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")
    except OSError as exc:
        raise ReflexionError(
            f"cannot write results to {path}: {exc.strerror}; pass --output to a writable file"
        ) from None


# ---- running one thread ---------------------------------------------------------------------


def print_trial(record: dict[str, Any], label: str = "") -> None:
    """One trial's line: its verdict, answer, score and feedback."""
    mark = "[green]✓[/]" if record["success"] else "[red]✗[/]"
    answer = record["answer"] if record["answer"] is not None else "(no answer)"
    console.print(
        f"{label}trial {record['trial']}: {mark} answer={escape(repr(answer))} "
        f"[dim]score={record['score']:.2f} · {escape(record['feedback'])}[/]"
    )
