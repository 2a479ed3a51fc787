"""The tables of one task family each: programming's pass@1 with the paper's Table 2, the
evidence its accepted answers had and its paired iterations; HotPotQA's paired strategies and
the LLM judge's agreement with gold; ALFWorld's Figure 3 as tables. Built on the common tables
of :mod:`reflexion.harness.bench.reports`, and read at 80 columns like them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table

from reflexion.core.answers import normalize_answer
from reflexion.harness.bench.driver import solved_by_trial
from reflexion.harness.bench.reports import copied, outcome, paired_cells, table
from reflexion.harness.bench.stats import paired
from reflexion.harness.scoring.alfworld import FAILURE_CLASSES, failure_counts, solved_curve
from reflexion.harness.scoring.programming import (
    accepted,
    broken_first,
    confusion,
    pass_at_1,
    pass_curve,
)
from reflexion.prompts import load_prompt


def code_summary(results: dict[str, list[dict[str, Any]]]) -> Table:
    """pass@1, right first attempts the loop broke, the paper's Table 2 counts and the mean
    wall time, one row per strategy."""
    out = table(
        "strategy",
        "problems",
        "pass@1",
        "broken\nfirst",
        "TP",
        "FN",
        "FP",
        "TN",
        "mean wall\ntime",
        title="broken first: the first attempt passes the hidden tests, the final answer not",
    )
    for label, finals in results.items():
        counts = confusion(finals)
        walls = [f["wall_s"] for f in finals if not f.get("resumed") and "wall_s" in f]
        mean = f"{sum(walls) / len(walls):.1f}s" if walls else "-"
        tested = any(f.get("tests") for f in finals)
        cells = (
            [str(counts.tp), str(counts.fn), str(counts.fp), str(counts.tn)]
            if tested
            else ["-"] * 4
        )
        solved = sum(bool(f.get("hidden_pass")) for f in finals)
        out.add_row(
            label,
            str(len(finals)),
            f"{pass_at_1(finals):.2f} ({solved}/{len(finals)})",
            str(broken_first(finals)),
            *cells,
            mean,
        )
    return out


def solving_attempt(final: dict[str, Any]) -> int | None:
    """The attempt (1-based) after which the answer the thread would return first passes the
    hidden tests; ``None`` when no attempt's does."""
    seq = final.get("pass_by_iteration") or []
    return next((k for k, ok in enumerate(seq, 1) if ok), None)


def gains_by_attempt(results: dict[str, list[dict[str, Any]]], baseline: str) -> Table:
    """Where each run's differences with the baseline end: the tasks it solved and the
    baseline did not, by the attempt whose answer solved them (:func:`solving_attempt`), and
    the tasks the baseline solved and it did not, by the baseline's attempt. Every final must
    carry ``pass_by_iteration`` (whose last entry is ``hidden_pass``)."""
    base = {str(f.get("task_id")): f for f in results[baseline]}
    counts: dict[str, tuple[Counter[int], Counter[int]]] = {}
    for label, finals in results.items():
        if label == baseline:
            continue
        fixed: Counter[int] = Counter()
        broken: Counter[int] = Counter()
        for f in finals:
            other = base.get(str(f.get("task_id")))
            if other is None or outcome(f) == outcome(other):
                continue
            winner, tally = (f, fixed) if outcome(f) else (other, broken)
            tally[solving_attempt(winner) or 0] += 1
        counts[label] = (fixed, broken)
    attempts = max((k for pair in counts.values() for c in pair for k in c), default=1)
    columns = range(1, max(attempts, 1) + 1)
    out = table(
        "run",
        *(f"fixed\nat {k}" for k in columns),
        *(f"broken\nat {k}" for k in columns),
        title=f"against {baseline}, by attempt: fixed at the run's solving attempt, broken "
        "at the baseline's",
    )
    for label, (fixed, broken) in counts.items():
        out.add_row(label, *(str(fixed[k]) for k in columns), *(str(broken[k]) for k in columns))
    return out


def accepted_table(results: dict[str, list[dict[str, Any]]]) -> Table:
    """The final answers the internal tests accepted: how many the hidden tests agree with,
    and on how many counted tests they were accepted."""
    out = table(
        "strategy",
        "accepted",
        "hidden\nagree",
        "hidden\ndisagree",
        "counted tests\npassed (mean)",
        "accepted on\none test",
        title="accepted: final answers whose internal tests passed",
    )
    for label, finals in results.items():
        a = accepted(finals)
        if not a.accepted:
            continue
        mean = f"{a.tests_passed / a.recorded:.1f}" if a.recorded else "-"
        out.add_row(
            label,
            str(a.accepted),
            str(a.hidden_agree),
            str(a.accepted - a.hidden_agree),
            mean,
            str(a.thin) if a.recorded else "-",
        )
    return out


def qa_paired(
    results: dict[str, list[dict[str, Any]]], baseline: str, examples: str = "qa/reflect_examples"
) -> Table:
    """Strategies forked from one shared trial 1, question by question: what each fixed after
    trial 1, and each against the no-memory baseline (when it ran) with the exact McNemar
    p-value on the questions one solved and the other did not; and the copy rate of the
    strategy's reflections against the worked examples of the prompt file ``examples``."""
    out = table(
        "strategy",
        "ques-\ntions",
        "trial\n1",
        "final",
        "fixed\nafter\ntrial 1",
        "vs\nnone\n+/−",
        "Mc-\nNemar\np",
        "re-\npeated",
        "copied",
        title="paired: each strategy forks every question's trial-1 checkpoint. Repeated: "
        "retries giving an answer already judged incorrect. Copied: reflections reusing 5 "
        "words in a row of the worked examples",
    )
    worked = load_prompt(examples)
    solved = {
        label: {f["task_id"]: bool(f["solved"]) for f in finals}
        for label, finals in results.items()
    }
    reference = solved.get(baseline)
    for label, finals in results.items():
        first = paired(
            ((f.get("evaluations") or [{}])[0].get("success", False), f["solved"]) for f in finals
        )
        versus, p_value = "-", "-"
        if reference is not None and label != baseline:
            common = [q for q in solved[label] if q in reference]
            p = paired((reference[q], solved[label][q]) for q in common)
            versus, p_value = f"+{p.fixed}/−{p.broken}", f"{p.p_value:.3g}"
        reflections = [r for f in finals for r in f.get("reflections") or []]
        out.add_row(
            label,
            str(first.tasks),
            str(first.baseline),
            str(first.method),
            str(first.fixed),
            versus,
            p_value,
            repeated(finals),
            copied(reflections, worked),
        )
    return out


def judge_table(results: dict[str, list[dict[str, Any]]], baseline: str) -> Table:
    """Runs judged by an LLM that never saw the reference, scored on gold afterwards: the
    judge's verdicts on every trial against gold (TP: judged right and right; FP: judged right
    but wrong; FN: judged wrong but right; TN), each strategy's final answers right on gold,
    and each against the baseline on gold with the exact McNemar p."""
    out = table(
        "strategy",
        "judged\ntrials",
        "TP",
        "FP",
        "FN",
        "TN",
        "right on\ngold",
        "vs base\n+/−",
        "Mc-\nNemar\np",
        title="no oracle: the LLM judge's verdicts and the final answers, scored on gold",
    )
    gold = {
        label: {f["task_id"]: bool(f.get("gold_final")) for f in finals}
        for label, finals in results.items()
    }
    reference = gold.get(baseline)
    for label, finals in results.items():
        tp = fp = fn = tn = 0
        for f in finals:
            for judged, right in zip(f.get("evaluations") or [], f.get("gold") or [], strict=False):
                success = bool(judged.get("success"))
                tp += success and right
                fp += success and not right
                fn += right and not success
                tn += not (success or right)
        versus, p_value = "-", "-"
        if reference is not None and label != baseline:
            p = paired((reference[t], gold[label][t]) for t in gold[label] if t in reference)
            versus, p_value = f"+{p.fixed}/−{p.broken}", f"{p.p_value:.3g}"
        right_final = sum(gold[label].values())
        out.add_row(
            label,
            str(tp + fp + fn + tn),
            *(str(n) for n in (tp, fp, fn, tn)),
            f"{right_final}/{len(finals)}",
            versus,
            p_value,
        )
    return out


def repeated(finals: list[dict[str, Any]]) -> str:
    """``repeats/retries``: trials after the first whose answer (normalised) is one an
    earlier trial of the same question gave and the evaluator judged incorrect."""
    repeats = retries = 0
    for final in finals:
        rejected: set[str] = set()
        for n, e in enumerate(final.get("evaluations") or []):
            answer = normalize_answer(str(e.get("answer") or ""))
            if n:
                retries += 1
                repeats += bool(answer) and answer in rejected
            if not e.get("success") and answer:
                rejected.add(answer)
    return f"{repeats}/{retries}" if retries else "-"


def code_paired(
    results: dict[str, list[dict[str, Any]]], examples: str = "programming/reflect_examples"
) -> Table:
    """Each multi-iteration run against its own first iteration, problem by problem (at
    T = 0 the first iteration is the ``simple`` baseline's sample): problems fixed and broken
    by the later iterations, and the exact McNemar p-value."""
    out = table(
        "strategy",
        "problems",
        "iteration\n1",
        "final",
        "fixed",
        "broken",
        "McNemar\np",
        "copied",
        title="paired: final answer vs the same thread's first iteration; copied: the "
        "threads' last Ω reflections that reuse 5 words in a row of the reflection "
        "prompt's worked examples",
    )
    worked = load_prompt(examples)
    for label, finals in results.items():
        rows = [
            (bool((f.get("pass_by_iteration") or [False])[0]), bool(f.get("hidden_pass")))
            for f in finals
        ]
        if not rows or all(len(f.get("evaluations") or []) <= 1 for f in finals):
            continue
        p = paired(rows)
        reflections = [r for f in finals for r in f.get("reflections") or []]
        out.add_row(label, *paired_cells(p), copied(reflections, worked))
    return out


def alfworld_summary(results: dict[str, list[dict[str, Any]]], trials: int) -> tuple[Table, Table]:
    """Figure 3a as a table (proportion of games won by each trial, per strategy) and
    Figure 3b's counts (failed trials by class, per strategy)."""
    solved = table(
        "trial",
        *(f"{name}: solved" for name in results),
        title="games won by trial (cumulative)",
        named_rows=False,
    )
    curves = {name: solved_curve(f, trials) for name, f in results.items()}
    for t in range(1, trials + 1):
        cells = []
        for name, finals in results.items():
            n = len(finals)
            value = curves[name][t - 1]
            cells.append(f"{value:.2f} ({round(value * n)}/{n})" if n else "-")
        solved.add_row(str(t), *cells)
    failures = table("strategy", "failed\ntrials", *(c.replace("_", " ") for c in FAILURE_CLASSES))
    for name, finals in results.items():
        counts = failure_counts(finals)
        total = sum(counts.values())
        failures.add_row(
            name,
            str(total),
            *(f"{counts[c]} ({counts[c] / total:.0%})" if total else "0" for c in FAILURE_CLASSES),
        )
    return solved, failures


def truth_curve(finals: list[dict[str, Any]], trials: int) -> list[float]:
    """The learning curve on what :func:`reflexion.harness.bench.reports.outcome` counts as solved,
    not on the loop's own verdict: pass@1 on the hidden tests after each iteration
    (programming), games the engine scored as won (ALFWorld), the gold answer of the answer
    standing after each trial (HotPotQA judged by an LLM), else the evaluator's verdict."""
    if not finals:
        return [0.0] * trials
    if any("pass_by_iteration" in f for f in finals):
        return pass_curve(finals, trials)
    if any("episodes" in f for f in finals):
        return solved_curve(finals, trials)
    if any("gold_final" in f for f in finals):
        return [sum(_gold_by(f, t) for f in finals) / len(finals) for t in range(1, trials + 1)]
    return solved_by_trial(finals, trials)


def _gold_by(final: dict[str, Any], trial: int) -> bool:
    """Whether the answer standing after ``trial`` was right on gold: the final answer once
    the thread had ended, else that trial's answer."""
    gold = final.get("gold") or []
    if len(final.get("evaluations") or []) <= trial or trial > len(gold):
        return bool(final.get("gold_final"))
    return bool(gold[trial - 1])
