"""``reflexion perf probes``: how well cross-check's probes (``CodeContext.cross_check``) could
tell a wrong implementation from a right one, with a perfect witness.

For each first attempt of a HumanEval (Python) results file that passes the prompt's examples,
the probes varied from those examples are run against the attempt and against HumanEval's
canonical solution. A wrong attempt that behaves unlike the canonical solution on a probe could
be caught by witnesses that are right; a right attempt that behaves unlike it would be
outvoted by right witnesses, a false alarm. Real witnesses are samples of the model, so these
are the most cross-check could do with these probes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.ledger import load_finals
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.programming.behaviour import fingerprint
from reflexion.programming.examples import example_tests
from reflexion.programming.probes import mutated_probes
from reflexion.programming.problems import assemble, canonical_solutions, load_problems
from reflexion.programming.sandbox import Limits, run_python_tests

KINDS = ("right, alike", "right, separated", "wrong, separated", "wrong, alike", "no probes")


def probe_figures(results: Path, max_probes: int) -> dict[str, Any]:
    """Counts of first attempts that pass their examples, by :data:`KINDS`, and the task ids
    of all but the first kind."""
    finals = load_finals(results)  # a wrong path fails before HumanEval loads
    problems = {p.task_id: p for p in load_problems("humaneval")}
    canonical = canonical_solutions()
    limits = Limits(test_timeout_s=5.0, suite_timeout_s=120.0)
    counts: Counter[str] = Counter()
    tasks: dict[str, list[str]] = {kind: [] for kind in KINDS[1:]}
    for final in finals:
        problem = problems.get(str(final.get("task_id")))
        if problem is None:
            raise ReflexionError(
                f"{results} holds task {final.get('task_id')}, not a HumanEval problem: "
                "give the results file of a `bench programming --dataset humaneval` run"
            )
        first = (final.get("evaluations") or [{}])[0].get("answer")
        trusted = example_tests(problem)[:max_probes]
        if not first or not trusted:
            continue
        program = assemble(problem, first)
        if not run_python_tests(program, trusted, limits).passed:
            continue
        right = bool((final.get("pass_by_iteration") or [False])[0])
        probes = mutated_probes(trusted, problem.entry_point, max_probes, problem.task_id)
        if not probes:
            kind = "no probes"
        else:
            mine = fingerprint(run_python_tests(program, probes, limits), probes)
            truth = fingerprint(
                run_python_tests(canonical[problem.task_id], probes, limits), probes
            )
            alike = "alike" if mine == truth else "separated"
            kind = f"{'right' if right else 'wrong'}, {alike}"
        counts[kind] += 1
        if kind in tasks:
            tasks[kind].append(problem.task_id)
    return {"counts": {kind: counts[kind] for kind in KINDS}, "tasks": tasks}


def probes(
    results: Annotated[
        Path, typer.Argument(help="Results JSONL of `reflexion bench programming` on HumanEval.")
    ],
    max_probes: Annotated[
        int, typer.Option("--max-probes", metavar="N", min=1, help="Probes per problem.")
    ] = 6,
    json_path: JsonOpt = None,
) -> None:
    """How far cross-check's probes (inputs varied from the prompt's examples) separate wrong
    first attempts from right ones, with HumanEval's canonical solution as a perfect witness."""
    figures = probe_figures(results, max_probes)
    table = Table("first attempts passing their examples", "count", "tasks")
    for kind in KINDS:
        table.add_row(kind, str(figures["counts"][kind]), " ".join(figures["tasks"].get(kind, [])))
    report(
        "probes", [table], figures, {"results": str(results), "max_probes": max_probes}, json_path
    )
