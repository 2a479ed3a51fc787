"""The report tables every benchmark prints: accuracy by trial, outcomes and model usage, and
paired comparisons with the exact McNemar test (one task family's own tables are
:mod:`reflexion.harness.bench.family_tables`). Each reads at 80 columns: cells wrap, nothing is cut
to
an ellipsis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.table import Table

from reflexion.harness.bench.driver import solved_by_trial
from reflexion.harness.bench.stats import Paired, copy_rate, paired
from reflexion.harness.bench.usage import merge, totals

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
