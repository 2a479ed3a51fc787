"""The generic reflector's worked examples, measured: the generic graph on a seeded HotPotQA
slice (each question with its gold paragraphs as context, exact match on the gold answer) once
per prompt file of examples, paired question by question.

    python .ci/reflector_examples.py [-n 20] [--seed 0] [--trials 3] [--out DIR] [FILE...]

``--report`` runs nothing and compares the questions every file already holds.
FILE: prompt files of worked reflections (default: qa/reflect_examples, the HotPotQA ones the
generic graph showed before, and common/generic_reflect_examples, its own). The first file is
the baseline of the +/−.
The actor runs at T = 0 (the reflector always does), so a rerun on the same commit and
``REFLEXION_THREADS`` gives the same figures. One JSONL file per run goes to DIR, and a rerun
reads back the questions it holds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from reflexion.core.context import Context
from reflexion.graphs.generic import generic_builder
from reflexion.harness.bench.datasets import gold_passages
from reflexion.harness.bench.stats import copy_rate, paired
from reflexion.nodes.reflector import GENERIC_REFLECT_EXAMPLES
from reflexion.prompts import load_prompt
from reflexion.qa.questions import iter_hotpotqa


def read_back(path: Path) -> list[dict[str, Any]]:
    """The rows a run's file holds."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_file(examples: str, questions: list[Any], trials: int, out: Path) -> list[dict[str, Any]]:
    """Every question through the generic graph with the reflector's examples ``examples``;
    the questions already in the run's file are read back, not run again (a rerun resumes,
    and one process per file can run them side by side, then one more prints the table)."""
    graph = generic_builder(examples).compile()
    ctx = Context(max_trials=trials, temperature=0.0)
    path = out / f"{Path(examples).name}-{trials}.jsonl"
    done = {r["task_id"]: r for r in read_back(path)}
    with path.open("a", encoding="utf-8") as file:
        for q in questions:
            if q.id in done:
                continue
            started = time.monotonic()
            state = graph.invoke(
                {"task": q.question, "passages": gold_passages(q), "reference": q.answer},
                context=ctx,
            )
            row = {
                "task_id": q.id,
                "first": bool(state["evaluations"][0]["success"]),
                "solved": bool(state["solved"]),
                "answers": [e["answer"] for e in state["evaluations"]],
                "reflections": state.get("reflections") or [],
                "wall_s": round(time.monotonic() - started, 1),
            }
            done[q.id] = row
            file.write(json.dumps(row) + "\n")
            file.flush()
            print(examples, q.id, row["answers"], row["solved"], row["wall_s"], flush=True)
    return [done[q.id] for q in questions]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "files", nargs="*", default=["qa/reflect_examples", GENERIC_REFLECT_EXAMPLES]
    )
    parser.add_argument("-n", type=int, default=20, help="questions drawn from the 100")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("runs/reflector-examples"))
    parser.add_argument(
        "--report", action="store_true", help="run nothing: compare the questions every file holds"
    )
    args = parser.parse_args()
    everything = list(iter_hotpotqa())
    chosen = sorted(random.Random(args.seed).sample(range(len(everything)), args.n))
    questions = [everything[i] for i in chosen]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report:
        results = {
            name: read_back(args.out / f"{Path(name).name}-{args.trials}.jsonl")
            for name in args.files
        }
        held = set.intersection(*({r["task_id"] for r in rows} for rows in results.values()))
        results = {n: [r for r in rows if r["task_id"] in held] for n, rows in results.items()}
        questions = [q for q in questions if q.id in held]
    else:
        results = {name: run_file(name, questions, args.trials, args.out) for name in args.files}
    base_name = args.files[0]
    base = sorted(results[base_name], key=lambda r: str(r["task_id"]))
    results = {n: sorted(rows, key=lambda r: str(r["task_id"])) for n, rows in results.items()}
    print(
        f"\n{len(questions)} questions of the {args.n} drawn (seed {args.seed}: {chosen}), "
        f"{args.trials} trials"
    )
    print("examples | trial 1 | solved | vs first file +/- (p) | reflections | copied")
    for name, rows in results.items():
        reflections = [r for row in rows for r in row["reflections"]]
        source = load_prompt(name)
        versus = "-"
        if name != base_name:
            p = paired((b["solved"], r["solved"]) for b, r in zip(base, rows, strict=True))
            versus = f"+{p.fixed}/-{p.broken} ({p.p_value:.2g})"
        print(
            f"{name} | {sum(r['first'] for r in rows)} | {sum(r['solved'] for r in rows)} | "
            f"{versus} | {len(reflections)} | {copy_rate(reflections, source):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
