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
without a tie or the trials run out; the chosen attempt's hidden tests decide. A thread whose
recorded draws run out before that end gets no verdict (``partial``).

And what the second attempt did with the first self-written test the first attempt failed
that a ``held_out`` retry is shown (the same test in every run of the same first attempts, so
runs pair on it), by whether the canonical solution passes it, and whether the second attempt
passed it, failed it with the same output, or failed it otherwise.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.runtime import Runtime
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.core.selection import chosen_index
from reflexion.graphs.loop import trial_record
from reflexion.harness.bench.datasets import humaneval_path, load_problems
from reflexion.harness.bench.ledger import load_finals
from reflexion.harness.perf.code_retries import failed_tests, tie_stop
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.harness.scoring.programming import run_hidden
from reflexion.nodes.programming.evaluator import make_unit_test_evaluator
from reflexion.nodes.programming.feedback import held_out
from reflexion.programming.context import CodeContext
from reflexion.programming.problems import CodeProblem, assemble
from reflexion.programming.sandbox import Limits, run_python_tests
from reflexion.programming.state import CodeState

LIMITS = Limits(test_timeout_s=5.0, suite_timeout_s=120.0)
KINDS = ("all wrong", "mixed", "all right")
"""How the tests a tied earlier attempt failed fare on the canonical solution."""
SECOND = ("passed", "same output", "other")
"""What the second attempt did with the first failed shown test."""


def canonical_solutions() -> dict[str, str]:
    """HumanEval's canonical solutions as whole programs (prompt and body), by task id: the
    ``perf`` commands' perfect witness (never shown to the agent)."""
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {r["task_id"]: r["prompt"] + r["canonical_solution"] for r in rows}


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
    second: dict[str, dict[str, int]] = field(default_factory=dict)
    """The first failed shown test of threads with a second attempt: ``right``/``wrong`` on
    the canonical solution → what the second attempt did with it (:data:`SECOND`) → count."""
    replay: dict[str, list[str]] = field(default_factory=dict)
    """With ``--blind``: ``gained``, ``lost``, ``same`` (task ids of the tie threads replayed to
    an end), ``partial`` (the recorded draws ran out first: no verdict), ``no_draw`` (no later
    attempt recorded: nothing to replay)."""


def first_shown_failure(final: dict[str, Any]) -> tuple[str, str] | None:
    """The first test the thread's first attempt failed, of those a ``held_out`` retry is
    shown (every self-written test but every second one), with its actual output; ``None``
    when there is none or no second attempt to judge."""
    records = final.get("evaluations") or []
    written = list(final.get("written_tests") or [])
    if len(records) < 2 or not records[0].get("feedback") or not records[1].get("feedback"):
        return None
    thread = CodeState(tests=list(final.get("tests") or []), written_tests=written)
    hidden = held_out(thread, CodeContext(internal_tests="held_out"))
    failed = failed_tests(records[0], written)
    return next(((t, out) for t, out in failed if t not in hidden), None)


def second_try(final: dict[str, Any], problem: CodeProblem, test: str, output: str) -> str:
    """What the thread's second attempt did with ``test``, which the first failed with
    ``output`` (:data:`SECOND`), run in the sandbox (the feedback keeps no output for a test
    every attempt failed)."""
    code = final["evaluations"][1].get("answer")
    if not code:
        return "other"
    outcome = run_python_tests(assemble(problem, code), [test], LIMITS).outcomes
    if outcome and outcome[0]["passed"]:
        return "passed"
    again = outcome[0]["detail"] if outcome else ""
    return "same output" if again.strip() == output else "other"


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
    return {o["test"] for o in result.outcomes if not o["passed"]}


@dataclass
class Replayed:
    """One tie thread replayed: whether its answer ends right, and whether the replay ran to
    an end the graph would reach (``complete``) or the recorded draws ran out first."""

    right: bool
    complete: bool


def replay(final: dict[str, Any], later: list[dict[str, Any]], problem: CodeProblem) -> Replayed:
    """The thread of ``final`` replayed as if its tie settled nothing: its own attempts, then
    those in ``later`` (another run's records of the same task after the tie's trial), each
    judged by the evaluator node, until an attempt succeeds without a tie or the trials run
    out; the answer is chosen as the thread's settings choose it."""
    settings = final.get("settings") or {}
    ctx = CodeContext(
        max_trials=int(settings.get("max_trials", 4)),
        # the evaluator weighs every test_trust but "all" alike (older runs recorded others)
        internal_tests="all" if settings.get("test_trust") == "all" else "held_out",
        test_timeout=float(settings.get("test_timeout", 5.0)),
    )
    runtime = Runtime(context=ctx)
    evaluate = make_unit_test_evaluator()
    attempts = [e.get("answer") for e in [*(final.get("evaluations") or []), *later]]
    state = CodeState(
        task=problem.prompt,
        task_id=problem.task_id,
        entry_point=problem.entry_point,
        language="py",
        tests=list(final.get("tests") or []),
        written_tests=list(final.get("written_tests") or []),
    )
    settled = False
    for trial, code in enumerate(attempts[: ctx.max_trials], start=1):
        state.trial, state.answer = trial, code
        update = trial_record(state, evaluate(state, runtime))  # the loop's record of it
        state.evaluations = [*state.evaluations, *update["evaluations"]]
        state.test_failures = [*state.test_failures, *update["test_failures"]]
        record = update["evaluations"][0]
        settled = bool(record.get("success")) and record.get("ties") is None
        if settled:
            break
    index = chosen_index(state.evaluations, settings.get("select_answer", "best"))
    answer = state.evaluations[index]["answer"] if index is not None else None
    right = bool(answer) and run_hidden(problem, str(answer), LIMITS)[0]
    return Replayed(right, settled or state.trial >= ctx.max_trials)


def _replayed(now: Replayed, before: bool) -> str:
    """The replay's verdict on one thread, as a key of :attr:`OwnTestFigures.replay`."""
    if not now.complete:
        return "partial"
    if now.right == before:
        return "same"
    return "gained" if now.right else "lost"


def _kind(apart: set[str], wrong: set[str]) -> str:
    """How the tests a tie set apart fare on the canonical solution (:data:`KINDS`)."""
    if apart <= wrong:
        return "all wrong"
    return "all right" if not apart & wrong else "mixed"


def _blind_runs(blind: Path, results: Path) -> dict[str, dict[str, Any]]:
    """The finished tasks of a ``resample`` results file, by task id; another kind of run is
    a one-line error."""
    finals = load_finals(blind)
    kinds = {
        (f.get("settings") or {}).get("retry", (f.get("settings") or {}).get("code_retry"))
        for f in finals
    }
    if kinds != {"resample"}:
        raise ReflexionError(
            f"{blind} is not a `--loop resample` run: --blind replays ties with blind "
            f"redraws, so give the resample results file of the run that {results} forked from"
        )
    return {str(f.get("task_id")): f for f in finals}


def _after(records: list[dict[str, Any]], trial: int) -> list[dict[str, Any]]:
    """The records after trial ``trial``, in trial order."""
    return sorted((r for r in records if int(r.get("trial", 0)) > trial), key=lambda r: r["trial"])


def own_test_figures(results: Path, blind: Path | None = None) -> OwnTestFigures:
    """:class:`OwnTestFigures` for ``results`` (and the replay against ``blind``)."""
    finals = load_finals(results)
    later = _blind_runs(blind, results) if blind else {}
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
        shown = first_shown_failure(final)
        if shown is not None:
            row = figures.second.setdefault("wrong" if shown[0] in wrong else "right", {})
            did = second_try(final, problem, *shown)
            row[did] = row.get(did, 0) + 1
        if not tie_stop(final):
            continue
        records = final.get("evaluations") or []
        tied = int(records[-1]["ties"])
        earlier = next(r for r in records if r.get("trial") == tied)
        kind = _kind(_failed(earlier.get("answer"), problem, tests), wrong)
        outcome = "right" if final.get("hidden_pass") else "wrong"
        figures.ties.setdefault(outcome, {}).setdefault(kind, []).append(problem.task_id)
        if blind:
            if problem.task_id not in later:
                raise ReflexionError(
                    f"{blind} does not hold {problem.task_id}: finish that run first"
                )
            draws = _after(later[problem.task_id].get("evaluations") or [], len(records))
            key = (
                "no_draw"
                if not draws
                else _replayed(replay(final, draws, problem), bool(final.get("hidden_pass")))
            )
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
            help="A `bench programming --loop resample` results file of the same problems: "
            "replay each tie with its later blind redraws.",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """How right the model's own tests were (run against HumanEval's canonical solutions),
    what the second attempt did with the first failed test it could be shown, what the
    threads that ended on a tie had set apart, and (``--blind``) what spending their
    remaining trials on blind redraws would have changed."""
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
    second = Table("first failed shown test", *(f"second attempt: {k}" for k in SECOND))
    for kind in ("right", "wrong"):
        did = figures.second.get(kind, {})
        second.add_row(f"{kind} on the canonical solution", *(str(did.get(k, 0)) for k in SECOND))
    tables = [tests, ties, second]
    if blind:
        replayed = Table("tie threads replayed with blind redraws", "count", "tasks")
        for key in ("gained", "lost", "same", "partial", "no_draw"):
            ids = figures.replay.get(key, [])
            replayed.add_row(key.replace("_", " "), str(len(ids)), " ".join(ids))
        tables.append(replayed)
    inputs = {"results": str(results), "blind": str(blind) if blind else None}
    report("own-tests", tables, asdict(figures), inputs, json_path)
