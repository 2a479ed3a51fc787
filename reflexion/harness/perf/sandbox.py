"""``reflexion perf sandbox``: what one sandboxed unit test costs, in wall time and in CPU time
(a judged test runs a judge and a candidate process; a Rust suite first compiles both binaries,
and the figure per Rust test includes its share of that), and what a cold Rust compile costs,
optionally against another checkout of the repository in the same run."""

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


_COLD_COMPILES = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from reflexion.programming.sandbox import run_rust_tests
code = "fn add(a: i64, b: i64) -> i64 {\\n    a + b\\n}\\n"
run_rust_tests(code, ["assert_eq!(add(0, 1), 1);"], entry_point="add")  # the launcher, once
walls = []
for rep in range(int(sys.argv[2])):
    test = f"assert_eq!(add({rep + 7919}, 1), {rep + 7920});"  # a judge not compiled before
    start = time.perf_counter()
    result = run_rust_tests(code, [test], entry_point="add")
    walls.append(time.perf_counter() - start)
    assert result.passed, result
print(json.dumps(walls))
"""
"""Run in a fresh ``python -S`` with a tree first on ``sys.path``: the wall seconds of cold
suites (the candidate's and a new judge's compile, then one test)."""


def compile_figures(trees: dict[str, Path], reps: int, rounds: int = 3) -> dict[str, Any]:
    """Median milliseconds of a cold Rust suite (both binaries compiled, one test) for each
    tree, measured in ``rounds`` alternating processes of ``reps`` suites each, so that load
    changes hit every tree alike."""
    walls: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            done = subprocess.run(
                [sys.executable, "-S", "-c", _COLD_COMPILES, str(tree), str(reps)],
                capture_output=True,
                text=True,
                cwd=os.path.dirname(str(tree)) or "/",
                check=False,
            )
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise ReflexionError(f"the cold-compile timing failed in {tree}: {last}")
            walls[name].extend(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        name: {"cold_suite_ms": round(statistics.median(w) * 1000, 1), "suites": len(w)}
        for name, w in walls.items()
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
            help="Another checkout of this repository: time a cold Rust compile in both, "
            "alternating, and print the ratio (e.g. a `git worktree` of the commit before).",
        ),
    ] = None,
    json_path: JsonOpt = None,
) -> None:
    """Cost of one sandboxed unit test: median wall and CPU milliseconds per test (the CPU of
    the sandbox's child processes), for trivial passing tests, so the figure is the sandbox's
    own cost; with Rust, also the median wall time of a cold suite (the candidate's and a new
    judge's compile, one test). Timings depend on load: run it on an idle machine."""
    figures = sandbox_figures(tests, reps, rust)
    tables = []
    if rust and rustc_path() is not None:
        trees = {"this tree": Path(__file__).resolve().parents[2]}
        if baseline is not None:
            if not (baseline / "reflexion" / "programming" / "sandbox").is_dir():
                raise ReflexionError(
                    f"--baseline {baseline} is not a checkout of this repository: "
                    "pass a folder with reflexion/programming/sandbox/ (git worktree add DIR REV)"
                )
            trees["baseline"] = baseline.resolve()
        figures["rs_compile"] = compile_figures(trees, max(reps, 3))
        compile_table = Table("tree", "cold Rust suite, ms", "suites", "ratio to baseline")
        base = figures["rs_compile"].get("baseline", {}).get("cold_suite_ms")
        for name, fig in figures["rs_compile"].items():
            ratio = f"{fig['cold_suite_ms'] / base:.2f}x" if base else "—"
            compile_table.add_row(name, f"{fig['cold_suite_ms']:.1f}", str(fig["suites"]), ratio)
        tables.append(compile_table)
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
