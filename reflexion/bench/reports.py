"""The report tables every benchmark prints: accuracy by trial, outcomes and model usage,
pass@1 with the paper's Table 2, paired comparisons with the exact McNemar test, and ALFWorld's
Figure 3 as tables. Each reads at 80 columns: cells wrap, nothing is cut to an ellipsis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.table import Table

from reflexion.alfworld.scoring import failure_counts, solved_curve
from reflexion.alfworld.state import FAILURE_CLASSES
from reflexion.bench.driver import solved_by_trial
from reflexion.bench.stats import Paired, copy_rate, paired
from reflexion.core.answers import normalize_answer
from reflexion.core.usage import merge, totals
from reflexion.programming.scoring import accepted, broken_first, confusion, pass_at_1
from reflexion.prompts import load_prompt

LABEL_WIDTH = 15
"""Room the row names get when a table has it (``reflexion-fresh``, ``last_attempt``)."""


def table(*headers: str, title: str | None = None, named_rows: bool = True) -> Table:
    """A report table that reads at 80 columns: no vertical rules, one space between
    columns, cells wrap instead of being cut (headers break at the newlines they carry), and
    with ``named_rows`` the first column keeps a row name such as ``reflexion-fresh`` whole
    where the headers leave room (off for a column of trial numbers, and where a column a
    trial leaves none: the room is counted from the headers, not the cells)."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    widths = [max((len(word) for word in h.split()), default=1) for h in headers]
    room = 80 - sum(widths[1:]) - 2 * len(headers)
    if named_rows:
        widths[0] = max(widths[0], min(LABEL_WIDTH, room))
    for header, width in zip(headers, widths, strict=True):
        out.add_column(header, overflow="fold", min_width=width)
    return out


def compact(n: int) -> str:
    """A count in a few characters: 9,999, 12.3k, 123k, 1.23M, 4.56G."""
    if n < 10_000:
        return f"{n:,}"
    for unit, size in (("k", 1e3), ("M", 1e6)):
        text = f"{n / size:.3g}"
        if "e" not in text:  # 999,999 rounds to 1e+03k: the next unit
            return text + unit
    return f"{n / 1e9:.3g}G"


def summarize(results: dict[str, list[dict[str, Any]]], max_trials: int) -> Table:
    """Per run (e.g. per strategy), one row: how many tasks it ran and the cumulative
    accuracy by each trial (a row a run, so long strategy names stay readable at 80
    columns, ten trials included)."""
    out = table(
        "strategy",
        "tasks",
        *(f"{t}" for t in range(1, max_trials + 1)),
        title="cumulative accuracy by trial (share of the tasks solved by then)",
        named_rows=False,
    )
    for label, finals in results.items():
        curve = solved_by_trial(finals, max_trials)
        out.add_row(label, str(len(finals)), *(f"{v:.2f}" if finals else "-" for v in curve))
    return out


def outcome_table(
    results: dict[str, list[dict[str, Any]]],
    errors: dict[str, int],
    solved: Callable[[dict[str, Any]], bool],
    unit: str,
) -> Table:
    """Per strategy: tasks finished, solved and failed, tasks that ended with an error (kept
    apart: an error is not a failure, and the accuracies count finished tasks only), and the
    model calls and tokens of the finished tasks with the tokens per solved task (from the
    ``usage`` of their ``final`` lines)."""
    out = table(
        "strategy",
        "solved /\nfinished",
        "errors",
        "model\ncalls",
        "prompt\ntokens",
        "completion\ntokens",
        "tokens per\nsolved",
        title=f"{unit}: outcomes and model usage",
    )
    older = 0
    for label, finals in results.items():
        won = sum(1 for f in finals if solved(f))
        older += sum(1 for f in finals if not isinstance(f.get("usage"), dict))
        used = totals(merge(*(f.get("usage") for f in finals)))
        tokens = used["prompt_tokens"] + used["completion_tokens"]
        out.add_row(
            label,
            f"{won}/{len(finals)}",
            str(errors.get(label, 0)),
            compact(used["calls"]),
            compact(used["prompt_tokens"]),
            compact(used["completion_tokens"]),
            compact(round(tokens / won)) if won else "-",
        )
    out.caption = (
        f"accuracy = solved / finished {unit}; {unit} that ended with an error are not "
        "counted (a rerun retries them)"
        + (f"; {older} task(s) from older runs have no usage recorded" if older else "")
    )
    return out


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
    results: dict[str, list[dict[str, Any]]], baseline: str, examples: str = "reflect_examples"
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
    results: dict[str, list[dict[str, Any]]], examples: str = "code_reflect_examples"
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


def household_summary(results: dict[str, list[dict[str, Any]]], trials: int) -> tuple[Table, Table]:
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


def copied(reflections: list[str], examples: str) -> str:
    """``copied/all`` reflections (see :func:`copy_rate`), or ``-`` when there are none."""
    if not reflections:
        return "-"
    return f"{round(copy_rate(reflections, examples) * len(reflections))}/{len(reflections)}"


def paired_cells(p: Paired) -> list[str]:
    """Tasks, baseline solved, method solved, fixed, broken and the McNemar p, as cells."""
    counts = (p.tasks, p.baseline, p.method, p.fixed, p.broken)
    return [*(str(n) for n in counts), f"{p.p_value:.3g}"]


def outcome(final: dict[str, Any]) -> bool:
    """Whether a ``final`` line counts as solved: the hidden tests (programming), a won game
    (ALFWorld), the gold answer (HotPotQA judged by an LLM, scored on gold afterwards) or the
    evaluator's verdict (HotPotQA, exact match)."""
    if "gold_final" in final:
        return bool(final["gold_final"])
    if "hidden_pass" in final:
        return bool(final["hidden_pass"])
    if "won_at" in final:
        return final["won_at"] is not None
    return bool(final.get("solved"))


def outcomes(finals: list[dict[str, Any]]) -> dict[str, bool]:
    """Each task's outcome (:func:`outcome`), by task id."""
    return {str(f.get("task_id")): outcome(f) for f in finals}


def compare_table(runs: dict[str, list[dict[str, Any]]], baseline: str) -> Table:
    """Each run against the baseline run on the tasks both finished: solved counts, the tasks
    one solved and the other did not, and the exact McNemar p-value."""
    out = table(
        "run",
        "tasks in\ncommon",
        "baseline\nsolved",
        "run\nsolved",
        "fixed",
        "broken",
        "McNemar\np",
        title=f"paired against {baseline}",
    )
    base = outcomes(runs[baseline])
    for label, finals in runs.items():
        if label == baseline:
            continue
        mine = outcomes(finals)
        p = paired((base[t], mine[t]) for t in mine if t in base)
        out.add_row(label, *paired_cells(p))
    return out


def slices_table(runs: dict[str, list[dict[str, Any]]], baseline: str, size: int) -> Table:
    """Each run against the baseline, slice by slice: the baseline's tasks in its file's order
    (a benchmark's order, when it ran one task at a time) cut into runs of ``size``, with
    both solved counts and the tasks fixed and broken in each."""
    out = table(
        "run",
        "tasks",
        "baseline\nsolved",
        "run\nsolved",
        "fixed",
        "broken",
        title=f"slices of {size}, against {baseline}",
    )
    base = outcomes(runs[baseline])
    order = list(base)
    for label, finals in runs.items():
        if label == baseline:
            continue
        mine = outcomes(finals)
        common = [t for t in order if t in mine]
        for start in range(0, len(common), size):
            part = common[start : start + size]
            p = paired((base[t], mine[t]) for t in part)
            span = f"{start + 1}–{start + len(part)}"
            cells = (p.baseline, p.method, p.fixed, p.broken)
            out.add_row(label if start == 0 else "", span, *(str(n) for n in cells))
    return out
