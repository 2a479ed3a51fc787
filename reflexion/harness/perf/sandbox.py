"""``reflexion perf sandbox``: what one sandboxed unit test costs, in wall time and in CPU time
(a judged test runs a judge and a candidate process; a Rust suite first compiles both binaries,
and the figure per Rust test includes its share of that), and, against another checkout of the
repository in the same run, all of these and a cold Rust compile's cost."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.harness.perf.machine import JsonOpt, report
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


_TIMINGS = """
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from reflexion.programming.sandbox import run_python_tests, run_rust_tests
tests, reps, rust = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
def cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
def timed(run):
    walls, cpus = [], []
    for rep in range(reps):
        used, start = cpu(), time.perf_counter()
        run(rep)
        walls.append(time.perf_counter() - start)
        cpus.append(cpu() - used)
    return statistics.median(walls), statistics.median(cpus)
def check(result):
    assert result.passed, result
figures = {}
py = "def add(a, b):\\n    return a + b\\n"
suite = [f"assert add({i}, 1) == {i + 1}" for i in range(tests)]
wall, used = timed(lambda rep: check(run_python_tests(py, suite)))
figures["py_test_ms"], figures["py_test_cpu_ms"] = wall * 1000 / tests, used * 1000 / tests
if rust:
    rs = "fn add(a: i64, b: i64) -> i64 {\\n    a + b\\n}\\n"
    suite = [f"assert_eq!(add({i}, 1), {i + 1});" for i in range(tests)]
    check(run_rust_tests(rs, suite, entry_point="add"))  # the judge (and any launcher), once
    wall, used = timed(lambda rep: check(run_rust_tests(rs, suite, entry_point="add")))
    figures["rs_suite_ms"], figures["rs_suite_cpu_ms"] = wall * 1000, used * 1000
    figures["rs_test_ms"] = wall * 1000 / tests
    cold = [f"assert_eq!(add({7919 + tests}, 1), {7920 + tests});"]
    def one_cold(rep):  # a judge not compiled before: both binaries compiled, one test
        check(run_rust_tests(rs, [cold[0].replace("7919", str(7919 + rep))], entry_point="add"))
    figures["rs_cold_suite_ms"] = timed(one_cold)[0] * 1000
print(json.dumps(figures))
"""
"""Run in a fresh ``python -S`` with a tree first on ``sys.path``: per Python test, per warm
Rust suite (and test) and per cold Rust suite, median milliseconds (wall, and CPU of the
sandbox's processes) over ``reps`` suites."""

COMPARED = {
    "py_test_ms": "Python, wall ms / test",
    "py_test_cpu_ms": "Python, CPU ms / test",
    "rs_test_ms": "Rust, wall ms / test (warm suite)",
    "rs_suite_ms": "Rust, wall ms / warm suite",
    "rs_suite_cpu_ms": "Rust, CPU ms / warm suite",
    "rs_cold_suite_ms": "Rust, wall ms / cold suite (compiles, 1 test)",
}


def compare_figures(
    trees: dict[str, Path], tests: int, reps: int, rust: bool, rounds: int = 3
) -> dict[str, dict[str, float]]:
    """:data:`COMPARED`'s figures for each tree, measured in ``rounds`` alternating processes
    (``reps`` suites of ``tests`` each), so that load changes hit every tree alike; each
    figure is the median over the rounds."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            argv = [str(tree), str(tests), str(reps), "1" if rust else "0"]
            done = subprocess.run(
                [sys.executable, "-S", "-c", _TIMINGS, *argv],
                capture_output=True,
                text=True,
                cwd=os.path.dirname(str(tree)) or "/",
                check=False,
            )
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise ReflexionError(f"the sandbox timing failed in {tree}: {last}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        name: {k: round(statistics.median(r[k] for r in found), 1) for k in found[0]}
        for name, found in runs.items()
    }


def sandbox(
    tests: Annotated[
        int, typer.Option("--tests", metavar="N", min=1, help="Tests per suite.")
    ] = 20,
    reps: Annotated[int, typer.Option("--reps", metavar="N", min=1, help="Suites timed.")] = 3,
    rust: Annotated[
        bool, typer.Option("--rust/--no-rust", help="Also time Rust (when rustc is there).")
    ] = True,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="TREE",
            help="Another checkout of this repository: time Python tests, warm and cold Rust "
            "suites in both, alternating, and print the ratios (e.g. a `git worktree` of the "
            "commit before).",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """Cost of one sandboxed unit test: median wall and CPU milliseconds per test (the CPU of
    the sandbox's child processes), for trivial passing tests, so the figure is the sandbox's
    own cost. With --baseline, the same figures and a cold Rust suite's (the candidate's and a
    new judge's compile, one test) for this tree and another, side by side. Timings depend on
    load: run it on an idle machine."""
    figures = sandbox_figures(tests, reps, rust)
    tables = []
    rust = rust and rustc_path() is not None
    if baseline is not None:
        if not (baseline / "reflexion" / "programming" / "sandbox").is_dir():
            raise ReflexionError(
                f"--baseline {baseline} is not a checkout of this repository: "
                "pass a folder with reflexion/programming/sandbox/ (git worktree add DIR REV)"
            )
        trees = {"this tree": Path(__file__).resolve().parents[3], "baseline": baseline.resolve()}
        compared = compare_figures(trees, tests, reps, rust)
        figures["compared"] = compared
        table_cmp = Table(
            "figure (median of 3 alternating rounds)", "this tree", "baseline", "ratio"
        )
        for key, label in COMPARED.items():
            ours, theirs = compared["this tree"].get(key), compared["baseline"].get(key)
            if ours is None or theirs is None:
                continue
            ratio = f"{ours / theirs:.2f}x" if theirs else "—"
            table_cmp.add_row(label, f"{ours:.1f}", f"{theirs:.1f}", ratio)
        tables.append(table_cmp)
    table = Table("language", "wall ms / test", "CPU ms / test", "tests × suites")
    for language, fig in figures.items():
        if language not in ("py", "rs"):
            continue
        table.add_row(
            language,
            f"{fig['wall_ms_per_test']:.1f}",
            f"{fig['cpu_ms_per_test']:.1f}",
            f"{fig['tests']} × {fig['reps']}",
        )
    settings = {"tests": tests, "reps": reps, "baseline": str(baseline) if baseline else None}
    report("sandbox", [table, *tables], figures, settings, json_path)
