"""``reflexion perf sandbox``: what one sandboxed unit test costs, in wall time and in CPU time
(a judged test runs a judge and a candidate process; a Rust suite first compiles both binaries,
and the figure per Rust test includes its share of that)."""

from __future__ import annotations

import resource
import statistics
import time
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.perf.machine import JsonOpt, report
from reflexion.programming.sandbox import run_python_tests, run_rust_tests, rustc_path

PYTHON_CODE = "def add(a, b):\n    return a + b\n"
RUST_CODE = "fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sandbox_figures(tests: int, reps: int, rust: bool) -> dict[str, Any]:
    """Median wall and CPU milliseconds per passing test over ``reps`` suites of ``tests``."""
    languages = {"py": (PYTHON_CODE, [f"assert add({i}, 1) == {i + 1}" for i in range(tests)])}
    if rust and rustc_path() is not None:
        languages["rs"] = (RUST_CODE, [f"assert_eq!(add({i}, 1), {i + 1});" for i in range(tests)])
    figures: dict[str, Any] = {}
    for language, (code, suite) in languages.items():
        walls, cpus = [], []
        for _ in range(reps):
            cpu, start = _children_cpu(), time.perf_counter()
            if language == "py":
                result = run_python_tests(code, suite)
            else:
                result = run_rust_tests(code, suite, entry_point="add")
            walls.append((time.perf_counter() - start) / tests)
            cpus.append((_children_cpu() - cpu) / tests)
            if not result.passed:
                raise RuntimeError(f"the {language} reference suite failed: {result.outcomes}")
        figures[language] = {
            "wall_ms_per_test": round(statistics.median(walls) * 1000, 1),
            "cpu_ms_per_test": round(statistics.median(cpus) * 1000, 1),
            "tests": tests,
            "reps": reps,
        }
    return figures


def sandbox(
    tests: Annotated[
        int, typer.Option("--tests", metavar="N", min=1, help="Tests per suite.")
    ] = 20,
    reps: Annotated[int, typer.Option("--reps", metavar="N", min=1, help="Suites timed.")] = 3,
    rust: Annotated[
        bool, typer.Option("--rust/--no-rust", help="Also time Rust (when rustc is there).")
    ] = True,
    json_path: JsonOpt = None,
) -> None:
    """Cost of one sandboxed unit test: median wall and CPU milliseconds per test (the CPU of
    the sandbox's child processes), for trivial passing tests, so the figure is the sandbox's
    own cost. Timings depend on load: run it on an idle machine."""
    figures = sandbox_figures(tests, reps, rust)
    table = Table("language", "wall ms / test", "CPU ms / test", "tests × suites")
    for language, fig in figures.items():
        table.add_row(
            language,
            f"{fig['wall_ms_per_test']:.1f}",
            f"{fig['cpu_ms_per_test']:.1f}",
            f"{fig['tests']} × {fig['reps']}",
        )
    report("sandbox", [table], figures, {"tests": tests, "reps": reps}, json_path)
