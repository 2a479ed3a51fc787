"""``reflexion perf own-tests``: how right the model's own tests were, and what the threads
that ended on a tie had set apart.

For a HumanEval (Python) results file, every self-written test is run against HumanEval's
canonical solution: a test the canonical solution fails is wrong. For each thread that ended
on a tie with trials left (a retry failed only tests the earlier attempt failed too, doubt set
them apart, and the earlier attempt stood), the tests the earlier attempt failed are sorted by
that check, by whether the final answer is right.

With ``--blind``, each such thread is replayed as if a tie settled nothing while trials
remained: its recorded attempts, then the attempts a ``resample`` results file recorded for
the same task at the later trials (the blind redraws, drawn from the same prompt with the same
seeds), each judged by the real evaluator node in the sandbox, until an attempt succeeds
without a tie or the trials run out; the best attempt's hidden tests decide.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.runtime import Runtime
from rich.table import Table

from reflexion.bench.ledger import load_finals
from reflexion.core.errors import ReflexionError
from reflexion.core.selection import chosen_index
from reflexion.nodes.coder import make_unit_test_evaluator
from reflexion.perf.machine import JsonOpt, report
from reflexion.perf.retries import tie_stop
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import (
    CodeProblem,
    assemble,
    canonical_solutions,
    load_problems,
)
from reflexion.programming.sandbox import Limits, run_python_tests
from reflexion.programming.scoring import run_hidden
from reflexion.programming.state import CodeState

LIMITS = Limits(test_timeout_s=5.0, suite_timeout_s=120.0)
KINDS = ("all wrong", "mixed", "all right")
"""How the tests a tied earlier attempt failed fare on the canonical solution."""


@dataclass
class OwnTestFigures:
    """What ``perf own-tests`` counts in one results file."""

    tests: int = 0
    """Self-written tests, one per problem and test."""
    right: int = 0
    """… that HumanEval's canonical solution passes."""
    problems: int = 0
    """Problems with self-written tests."""
    problems_all_right: int = 0
    """… whose every test the canonical solution passes."""
    ties: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Threads that ended on a tie with trials left: final answer ``right``/``wrong`` → kind of
    the set-apart tests (:data:`KINDS`) → task ids."""
    replay: dict[str, list[str]] = field(default_factory=dict)
    """With ``--blind``: ``gained``, ``lost``, ``same`` (task ids of the replayed tie threads),
    ``no_draw`` (no later attempt recorded: nothing to replay)."""


def _problem(problems: dict[str, CodeProblem], final: dict[str, Any], path: Path) -> CodeProblem:
    problem = problems.get(str(final.get("task_id")))
    if problem is None:
        raise ReflexionError(
            f"{path} holds task {final.get('task_id')}, not a HumanEval problem: give the "
            "results file of a `bench programming --dataset humaneval` run"
        )
    return problem


def _failed(code: str | None, problem: CodeProblem, tests: list[str]) -> set[str]:
    """The tests ``code`` fails (every test when there is no code)."""
    if not code:
        return set(tests)
    result = run_python_tests(assemble(problem, code), tests, LIMITS)
    return {o.test for o in result.outcomes if not o.passed}


def replay(final: dict[str, Any], later: list[dict[str, Any]], problem: CodeProblem) -> bool | None:
    """Whether the thread of ``final`` ends right when its tie settles nothing and the
    attempts in ``later`` (another run's records of the same task, from the trial after the
    tie on) follow; ``None`` when ``later`` holds none."""
    settings = final.get("settings") or {}
    ctx = CodeContext(
        max_trials=int(settings.get("max_trials", 4)),
        test_trust=settings.get("test_trust", "held_out"),
        cross_check=0,
    )
    runtime = Runtime(context=ctx)
    evaluate = make_unit_test_evaluator()
    done = final.get("evaluations") or []
    attempts = [e.get("answer") for e in done] + [e.get("answer") for e in later]
    if len(attempts) == len(done):
        return None
    state = CodeState(
        task=problem.prompt,
        task_id=problem.task_id,
        entry_point=problem.entry_point,
        language="py",
        tests=list(final.get("tests") or []),
        written_tests=list(final.get("written_tests") or []),
    )
    for trial, code in enumerate(attempts[: ctx.max_trials], start=1):
        state.trial, state.answer = trial, code
        update = evaluate(state, runtime)
        state.evaluations = [*state.evaluations, *update["evaluations"]]
        state.test_failures = [*state.test_failures, *update["test_failures"]]
        record = update["evaluations"][0]
        if record.get("success") and record.get("ties") is None:
            break
    index = chosen_index(state.evaluations, "best")
    answer = state.evaluations[index]["answer"] if index is not None else None
    return bool(answer) and run_hidden(problem, str(answer), LIMITS)[0]


def _replayed(now: bool | None, before: bool) -> str:
    """The replay's verdict on one thread, as a key of :attr:`OwnTestFigures.replay`."""
    if now is None:
        return "no_draw"
    if now == before:
        return "same"
    return "gained" if now else "lost"


def own_test_figures(results: Path, blind: Path | None = None) -> OwnTestFigures:
    """:class:`OwnTestFigures` for ``results`` (and the replay against ``blind``)."""
    finals = load_finals(results)
    later = {str(f.get("task_id")): f for f in load_finals(blind)} if blind else {}
    problems = {p.task_id: p for p in load_problems("humaneval")}
    canonical = canonical_solutions()
    figures = OwnTestFigures()
    for final in finals:
        problem = _problem(problems, final, results)
        tests = list(final.get("written_tests") or [])
        if not tests:
            continue
        wrong = _failed(canonical[problem.task_id], problem, tests)
        figures.tests += len(tests)
        figures.right += len(tests) - len(wrong)
        figures.problems += 1
        figures.problems_all_right += not wrong
        if not tie_stop(final):
            continue
        records = final.get("evaluations") or []
        earlier = records[int(records[-1]["ties"]) - 1]
        apart = _failed(earlier.get("answer"), problem, tests)
        kind = KINDS[0] if apart <= wrong else KINDS[2] if not apart & wrong else KINDS[1]
        outcome = "right" if final.get("hidden_pass") else "wrong"
        figures.ties.setdefault(outcome, {}).setdefault(kind, []).append(problem.task_id)
        if blind:
            other = later.get(problem.task_id, {}).get("evaluations") or []
            now = replay(final, other[len(records) :], problem)
            key = _replayed(now, bool(final.get("hidden_pass")))
            figures.replay.setdefault(key, []).append(problem.task_id)
    return figures


def own_tests(
    results: Annotated[
        Path,
        typer.Argument(
            help="Results JSONL of `reflexion bench programming --dataset humaneval "
            "--no-example-tests`."
        ),
    ],
    blind: Annotated[
        Path | None,
        typer.Option(
            "--blind",
            metavar="RESULTS",
            help="A `--strategy resample` results file of the same problems: replay each "
            "tie with its later blind redraws.",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """How right the model's own tests were (run against HumanEval's canonical solutions),
    what the threads that ended on a tie had set apart, and (``--blind``) what spending
    their remaining trials on blind redraws would have changed."""
    figures = own_test_figures(results, blind)
    share = figures.right / figures.tests if figures.tests else 0.0
    tests = Table("self-written tests", "count")
    tests.add_row("tests", str(figures.tests))
    tests.add_row("right on the canonical solution", f"{figures.right} ({share:.0%})")
    tests.add_row("problems with tests", str(figures.problems))
    tests.add_row("problems whose every test is right", str(figures.problems_all_right))
    ties = Table("ended on a tie with trials left", *(f"set-apart tests {k}" for k in KINDS))
    for outcome in ("right", "wrong"):
        row = figures.ties.get(outcome, {})
        ties.add_row(f"final answer {outcome}", *(str(len(row.get(k, []))) for k in KINDS))
    tables = [tests, ties]
    if blind:
        replayed = Table("tie threads replayed with blind redraws", "count", "tasks")
        for key in ("gained", "lost", "same", "no_draw"):
            ids = figures.replay.get(key, [])
            replayed.add_row(key.replace("_", " "), str(len(ids)), " ".join(ids))
        tables.append(replayed)
    inputs = {"results": str(results), "blind": str(blind) if blind else None}
    report("own-tests", tables, asdict(figures), inputs, json_path)
