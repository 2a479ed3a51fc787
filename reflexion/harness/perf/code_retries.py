"""``reflexion perf retries``: what each retry of a programming run did, judged by the hidden
tests, so that a strategy's figure can be taken apart.

pass@1 says only where a thread ended. This command runs the hidden tests on *every* attempt
of every thread in a results file and counts:

- **generation**: after a wrong attempt, how often the retry was right (a fix); after a right
  attempt that failed some of its own tests, how often the retry was wrong (the feedback led
  away from right code);
- **selection**: threads that drew a right attempt at some point, and how many of them
  returned one (the evidence chose it) or lost it;
- **evidence**: the self-written tests that a right attempt failed (the test, not the code, is
  wrong), of all the self-written tests that right attempts ran;
- **reflections**: how many quote an input of a test that failed just before them (grounded
  in what was executed) rather than speak in general terms, and how often a retry after a
  grounded one passed the failed test (the caption);
- **tie stops**: threads that ended before their last trial because an attempt passed every
  test that counts and so did an earlier one (doubt had set apart the tests both failed),
  and how many of them returned a right answer: the evidence could not tell the attempts
  apart, and the thread spent no more of its budget;
- **the failed tests**: for each internal test an attempt failed, whether the retry from that
  attempt passed it, or failed it again with the same output (the retry kept the behaviour
  the feedback named). A blind redraw (``resample``) never saw the test, so its figure is
  what a retry achieves with no feedback; a retry that reads the feedback should pass more.

Two strategies that fork the same first attempts (``simple`` → ``resample`` → ``reflexion``)
differ only in their retries and their choice, so these counts say where a difference in
pass@1 comes from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import load_problems
from reflexion.harness.bench.ledger import load_finals, read_results
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.harness.scoring.programming import run_hidden
from reflexion.programming.problems import CodeProblem
from reflexion.programming.sandbox import Limits

Judge = Callable[[str, str], bool]
"""``judge(task_id, code)``: whether the code passes the task's hidden tests."""


def failed_tests(record: Mapping[str, Any], among: Iterable[str]) -> list[tuple[str, str]]:
    """The failed tests of ``among`` that counted for a trial's verdict, in the tests' order,
    each with its actual output or error."""
    wanted = set(among)
    return [
        (o["test"], o["detail"].strip())
        for o in record.get("outcomes", [])
        if not o["passed"] and o["standing"] == "counted" and o["test"] in wanted
    ]


@dataclass
class RetryFigures:
    """The counts :func:`retry_figures` returns for one results file."""

    threads: int = 0
    attempts: int = 0
    after_wrong: int = 0
    """Retries that followed a wrong attempt."""
    fixed: int = 0
    """… and were right."""
    after_right: int = 0
    """Retries that followed a right attempt (one its own tests did not all pass)."""
    broke: int = 0
    """… and were wrong."""
    drew_right: int = 0
    """Threads with at least one right attempt."""
    returned_right: int = 0
    """… whose final answer is right."""
    right_tests: int = 0
    """Self-written test runs by right attempts (one per test and attempt)."""
    wrong_tests: int = 0
    """… that the right attempt failed: the test is wrong."""
    reflections: int = 0
    grounded: int = 0
    """Reflections that quote an input of a test failed just before them."""
    failed_before: int = 0
    """Internal tests an attempt failed that the retry from it ran too."""
    passed_after: int = 0
    """… and the retry passed."""
    same_output: int = 0
    """… and the retry failed with the same output or error."""
    grounded_failed: int = 0
    """Of ``failed_before``, those whose retry followed a grounded reflection."""
    grounded_passed: int = 0
    """… and the retry passed: does naming the failing input help the retry?"""
    after_all_wrong: dict[int, int] = field(default_factory=dict)
    """By attempt number k ≥ 2: threads whose attempts 1 … k−1 were all wrong and that drew
    an attempt k (where a strategy's retries help: the first retry, or the later ones)."""
    right_after_all_wrong: dict[int, int] = field(default_factory=dict)
    """… and attempt k was right."""
    tie_stops: int = 0
    """Threads that ended on a tie before their last trial (an earlier attempt passes every
    test that counts as well)."""
    tie_stops_right: int = 0
    """… whose final answer is right."""


def tie_stop(final: dict[str, Any]) -> bool:
    """Whether a thread ended on a tie with trials left: its last record succeeded only as an
    earlier attempt did (``ties``), before ``max_trials`` (when the settings name it)."""
    evaluations = final.get("evaluations") or []
    if not evaluations or not evaluations[-1].get("ties") or not evaluations[-1].get("success"):
        return False
    budget = (final.get("settings") or {}).get("max_trials")
    return budget is None or len(evaluations) < int(budget)


def call_arguments(test: str, entry_point: str) -> str | None:
    """The argument text of the first call of ``entry_point`` (or Rust's ``candidate``) in a
    test: ``assert f(1, [2]) == 3`` gives ``1, [2]``."""
    for name in (entry_point, "candidate"):
        start = test.find(f"{name}(")
        if start < 0:
            continue
        depth, begin = 0, start + len(name)
        for i in range(begin, len(test)):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(test[i], 0)
            if depth == 0:
                return test[begin + 1 : i].strip()
    return None


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def quotes_input(reflection: str, failed: Iterable[str], entry_point: str) -> bool:
    """Whether a reflection quotes the arguments of one of the failed tests (whitespace and
    quote style aside; empty argument lists do not count)."""
    text = _squeeze(reflection)
    for test in failed:
        args = call_arguments(test, entry_point)
        if args and _squeeze(args) in text:
            return True
    return False


def _written(final: dict[str, Any]) -> set[str] | None:
    """The thread's self-written tests: recorded since results carried ``written_tests``;
    before that, every test when the prompt's examples were off; else unknown (``None``)."""
    if "written_tests" in final:
        return set(final["written_tests"])
    if (final.get("settings") or {}).get("example_tests") is False:
        return set(final.get("tests") or [])
    return None


def retry_pairs(final: dict[str, Any]) -> list[tuple[int, int]]:
    """Each retry as (the attempt it followed, the retry), by position among the thread's
    attempts with code: the one before."""
    attempts = sum(1 for record in final.get("evaluations") or [] if record.get("answer"))
    return [(i - 1, i) for i in range(1, attempts)]


def passed_tests(record: Mapping[str, Any], among: Iterable[str]) -> list[str]:
    """The tests of ``among`` a trial's attempt passed, in the tests' order."""
    wanted = set(among)
    return [o["test"] for o in record.get("outcomes", []) if o["passed"] and o["test"] in wanted]


def _test_outcomes(record: dict[str, Any], tests: list[str]) -> dict[str, str | None]:
    """Each internal test a trial's verdict rests on: ``None`` when it passed, else its output
    or error (a doubted test that failed is left out: it did not count)."""
    found: dict[str, str | None] = {t: d for t, d in failed_tests(record, tests)}
    found.update((t, None) for t in passed_tests(record, tests))
    return found


def retry_figures(
    finals: Iterable[dict[str, Any]],
    judge: Judge,
    reflections: dict[str, list[tuple[int, str]]] | None = None,
) -> RetryFigures:
    """The counts for the ``final`` lines of one results file; ``judge`` runs hidden tests;
    ``reflections`` are the file's reflections by thread, each with the trial it follows
    (:func:`reflection_rows`)."""
    fig = RetryFigures()
    for final in finals:
        task = str(final.get("task_id"))
        entry = str(final.get("entry_point") or "")
        tests = list(final.get("tests") or [])
        written = _written(final)
        attempts = [e for e in final.get("evaluations") or [] if e.get("answer")]
        verdicts = [judge(task, e["answer"]) for e in attempts]
        fig.threads += 1
        fig.attempts += len(attempts)
        pairs = retry_pairs(final)
        for before, after in ((verdicts[a], verdicts[b]) for a, b in pairs):
            if before:
                fig.after_right += 1
                fig.broke += not after
            else:
                fig.after_wrong += 1
                fig.fixed += after
        for k in range(1, len(verdicts)):
            if not any(verdicts[:k]):
                fig.after_all_wrong[k + 1] = fig.after_all_wrong.get(k + 1, 0) + 1
                fig.right_after_all_wrong[k + 1] = (
                    fig.right_after_all_wrong.get(k + 1, 0) + verdicts[k]
                )
        if tie_stop(final):
            fig.tie_stops += 1
            fig.tie_stops_right += bool(final.get("hidden_pass"))
        if any(verdicts):
            fig.drew_right += 1
            fig.returned_right += bool(final.get("hidden_pass"))
        for record, right in zip(attempts, verdicts, strict=True):
            if not right or written is None:
                continue
            failed = [t for t, _ in failed_tests(record, written)]
            ran = passed_tests(record, written)
            fig.right_tests += len(failed) + len(ran)
            fig.wrong_tests += len(failed)
        by_trial = {e.get("trial"): e for e in final.get("evaluations") or []}
        grounded: set[int] = set()  # the trials whose reflection quotes a failed test's input
        for trial, reflection in (reflections or {}).get(str(final.get("thread_id")), []):
            fig.reflections += 1
            failed = [t for t, _ in failed_tests(by_trial.get(trial, {}), tests)]
            if quotes_input(reflection, failed, entry):
                fig.grounded += 1
                grounded.add(trial)
        for a, b in pairs:
            later = _test_outcomes(attempts[b], tests)
            after_grounded = attempts[a].get("trial") in grounded
            for test, output in failed_tests(attempts[a], tests):
                if test in later:
                    fig.failed_before += 1
                    fig.passed_after += later[test] is None
                    fig.same_output += later[test] == output
                    fig.grounded_failed += after_grounded
                    fig.grounded_passed += after_grounded and later[test] is None
    return fig


def reflection_rows(path: Path) -> dict[str, list[tuple[int, str]]]:
    """Every reflection a results file records (its ``reflection`` lines: the final line keeps
    only the last Ω), by thread, with the trial it reflects on."""
    found: dict[str, list[tuple[int, str]]] = {}
    for row in read_results(path):
        if row.get("type") == "reflection":
            found.setdefault(str(row.get("thread_id")), []).append(
                (int(row.get("trial") or 0), str(row.get("text") or ""))
            )
    return found


def hidden_judge(problems: dict[str, CodeProblem], limits: Limits) -> Judge:
    """A judge that runs the hidden tests once per distinct implementation of a task."""
    cache: dict[tuple[str, str], bool] = {}

    def judge(task: str, code: str) -> bool:
        if (task, code) not in cache:
            problem = problems.get(task)
            if problem is None:
                raise ReflexionError(
                    f"task {task} is not in the dataset: pass the run's --dataset and --language"
                )
            cache[(task, code)] = run_hidden(problem, code, limits)[0]
        return cache[(task, code)]

    return judge


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}" + (f" ({part / whole:.0%})" if whole else "")


def retries(
    results: Annotated[
        list[Path], typer.Argument(help="Results JSONL files of `reflexion bench programming`.")
    ],
    dataset: Annotated[
        str | None,
        typer.Option(help="The runs' dataset (default: the one their settings name)."),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """Every attempt of every thread judged by the hidden tests: fixes and breaks per retry,
    right attempts found and returned, wrong self-written tests, grounded reflections."""
    loaded: list[tuple[Path, dict[str, Any], list[dict[str, Any]]]] = []
    for path in results:
        finals = load_finals(path)
        settings = finals[0].get("settings") or {}
        if settings.get("bench") != "programming":
            raise ReflexionError(f"{path} is not a programming run: give `bench programming`'s")
        loaded.append((path, settings, finals))
    # Paired: only the tasks every file finished (a run still going counts as far as it got).
    common = set.intersection(*({str(f.get("task_id")) for f in fs} for _, _, fs in loaded))
    table = Table(
        "run",
        "wrong → right",
        "right → wrong",
        "right drawn → returned",
        "wrong own tests",
        "grounded",
        "failed test → passed",
        "… same output",
        title=f"retries judged by the hidden tests ({len(common)} tasks every file finished)",
    )
    figures: dict[str, dict[str, Any]] = {}
    captions: list[str] = []  # each file's name, and what followed its grounded reflections
    judges: dict[tuple[str, str], Judge] = {}
    limits = Limits(test_timeout_s=10.0, suite_timeout_s=30.0)
    for i, (path, settings, finals) in enumerate(loaded, 1):
        source = dataset or str(settings.get("dataset") or "humaneval")
        language = str(settings.get("language") or "py")
        if (source, language) not in judges:
            problems = load_problems(source, language=language)  # type: ignore[arg-type]
            judges[(source, language)] = hidden_judge({p.task_id: p for p in problems}, limits)
        kept = [f for f in finals if str(f.get("task_id")) in common]
        fig = retry_figures(kept, judges[(source, language)], reflection_rows(path))
        figures[str(path)] = asdict(fig)
        table.add_row(
            f"{i}. {settings.get('strategy_name', '?')}",
            _share(fig.fixed, fig.after_wrong),
            _share(fig.broke, fig.after_right),
            _share(fig.returned_right, fig.drew_right),
            _share(fig.wrong_tests, fig.right_tests),
            _share(fig.grounded, fig.reflections),
            _share(fig.passed_after, fig.failed_before),
            _share(fig.same_output, fig.failed_before),
        )
        after = (
            f" · after a grounded reflection: {_share(fig.grounded_passed, fig.grounded_failed)}"
            " passed"
            if fig.grounded
            else ""
        )
        by_attempt = ", ".join(
            f"{k}: {fig.right_after_all_wrong.get(k, 0)}/{n}"
            for k, n in sorted(fig.after_all_wrong.items())
        )
        first_right = f" · attempt k right after k−1 wrong ones: {by_attempt}" if by_attempt else ""
        ties = (
            f" · ended on a tie with trials left: {fig.tie_stops}, right {fig.tie_stops_right}"
            if fig.tie_stops
            else ""
        )
        captions.append(f"{i}. {path}{after}{first_right}{ties}")
    table.caption = "\n".join(captions)
    report("retries", [table], figures, {"results": [str(p) for p in results]}, json_path)
