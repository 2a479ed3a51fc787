"""Report tables read at 80 columns: nothing is cut to an ellipsis, with long strategy names,
four strategies side by side and large token counts."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from reflexion.harness.bench import family_tables, reports

LABELS = [
    "cot-gt none",
    "cot-gt last_attempt",
    "cot-gt reflexion",
    "cot-gt last_attempt_and_reflexion",
]


def final(i: int) -> dict[str, Any]:
    usage = {"actor": {"calls": 4321, "prompt_tokens": 12_345_678, "completion_tokens": 987_654}}
    return {
        "task_id": f"q{i}",
        "solved": i % 2 == 0,
        "evaluations": [{"success": i % 4 == 0}, {"success": i % 2 == 0}],
        "usage": usage,
        "wall_s": 123.4,
        "hidden_pass": i % 2 == 0,
        "pass_by_iteration": [i % 4 == 0, i % 2 == 0],
        "reflections": ["I will check the edge case."],
        "tests": ["assert f(1) == 1"],
        "internal_pass": True,
    }


RESULTS = {label: [final(i) for i in range(100)] for label in LABELS}


def rendered(table: Table) -> str:
    console = Console(width=80, record=True, file=None)
    with console.capture() as captured:
        console.print(table)
    return captured.get()


@pytest.mark.parametrize(
    "make",
    [
        lambda: reports.summarize(RESULTS, 4),
        lambda: reports.summarize(RESULTS, 10),
        lambda: reports.outcome_table(RESULTS, {}, lambda f: f["solved"], "questions"),
        lambda: family_tables.qa_paired(RESULTS, "cot-gt none"),
        lambda: family_tables.code_summary(RESULTS),
        lambda: family_tables.code_paired(RESULTS),
        lambda: family_tables.gains_by_attempt(RESULTS, "cot-gt none"),
    ],
    ids=[
        "accuracy by trial",
        "accuracy by ten trials",
        "outcomes and usage",
        "paired qa",
        "pass@1",
        "paired code",
        "gains by attempt",
    ],
)
def test_report_tables_fit_80_columns(make):
    text = rendered(make())
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= 80
    # nothing cropped either: every label's last word is there, whole or folded
    assert all(label.split()[-1] in "".join(text.split()) for label in LABELS), text


@pytest.mark.parametrize(
    "make",
    [
        lambda r: family_tables.qa_paired(r, "none"),
        family_tables.code_paired,
        family_tables.code_summary,
        lambda r: reports.outcome_table(r, {}, lambda f: f["solved"], "problems"),
    ],
    ids=["paired qa", "paired code", "pass@1", "outcomes and usage"],
)
def test_strategy_names_stay_whole_at_80_columns(make):
    """A strategy name of up to 15 characters is not broken across lines."""
    names = ["none", "last_attempt", "reflexion", "reflexion-fresh"]
    text = rendered(make({name: [final(i) for i in range(20)] for name in names}))
    rows = [line.split() for line in text.splitlines() if line.strip()]
    assert {name for name in names if [name] in [r[:1] for r in rows]} == set(names), text


def test_counts_are_compact():
    counts = (999, 9_999, 12_345, 123_456, 999_999, 1_234_567, 4_560_000_000)
    assert [reports.compact(n) for n in counts] == [
        "999",
        "9,999",
        "12.3k",
        "123k",
        "1M",
        "1.23M",
        "4.56G",
    ]


COMMANDS = [
    [],
    ["bench"],
    ["bench", "hotpotqa"],
    ["bench", "programming"],
    ["bench", "alfworld"],
    ["run"],
    ["show"],
    ["history"],
    ["models"],
    ["plot"],
    ["compare"],
    ["perf"],
    ["perf", "overhead"],
    ["perf", "concurrency"],
    ["perf", "inference"],
    ["perf", "learning-cost"],
    ["perf", "sandbox"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "reflexion")
def test_every_help_reads_whole_at_80_columns(command: list[str], monkeypatch) -> None:
    """Typer's help wraps words but cuts a word longer than its column with '…': every
    option's help, metavar and default must fit at 80 columns."""
    from typer.testing import CliRunner

    from reflexion.harness.cli.app import app

    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "reflexion")
def test_every_help_panel_fills_its_lines(command: list[str], monkeypatch) -> None:
    """No hard line break from a docstring inside a panel: where a row's text goes on to a
    second line, the first word there would not have fitted on the line before it."""
    from typer.testing import CliRunner

    from reflexion.harness.cli.app import app

    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    rows = [line[1:-1] for line in result.output.splitlines() if line.startswith("│")]
    for before, after in itertools.pairwise(rows):
        if not after[:2].isspace() or after.strip()[:1] in ("", "["):
            continue  # a new row, a blank line, or Typer's own [default: …] line
        room = len(before) - len(before.rstrip()) - 2  # the padding and a space
        word = after.split()[0]
        assert len(word) > room, f"{' '.join(command)}: {before.strip()!r} breaks before {word!r}"


def test_the_no_oracle_table_scores_the_judge_and_the_answers_on_gold():
    """Each trial's verdict against gold (TP, FP, FN, TN) and the final answers on gold, each
    strategy against the baseline; `compare` then counts gold, not the judge."""
    from reflexion.harness.bench.ledger import BenchTask
    from reflexion.harness.cli.hotpotqa import gold_scorer

    task = BenchTask("t", {}, "", {"reference": "the Vltava"})
    state = {
        "evaluations": [
            {"answer": "Elbe", "success": True},
            {"answer": "Vltava", "success": False},
        ],
        "answer": "Elbe",
    }
    assert gold_scorer()(task, state) == {"gold": [False, True], "gold_final": False}

    def row(task_id: str, verdicts: list[bool], gold: list[bool]) -> dict[str, Any]:
        evaluations = [{"success": v} for v in verdicts]
        return {
            "task_id": task_id,
            "evaluations": evaluations,
            "gold": gold,
            "gold_final": gold[-1],
        }

    results = {
        "none": [row("a", [True], [False]), row("b", [False, False], [False, False])],
        "reflexion": [row("a", [True], [False]), row("b", [False, True], [False, True])],
    }
    lines = rendered(family_tables.judge_table(results, "none")).splitlines()
    assert next(ln for ln in lines if ln.strip().startswith("none")).split() == [
        "none",
        "3",
        "0",
        "1",
        "0",
        "2",
        "0/2",
        "-",
        "-",
    ]
    assert next(ln for ln in lines if ln.strip().startswith("reflexion")).split() == [
        "reflexion",
        "3",
        "1",
        "1",
        "0",
        "1",
        "1/2",
        "+1/−0",
        "1",
    ]
    assert reports.outcome({"solved": True, "gold_final": False}) is False


def test_learning_curves_count_what_is_true_not_the_loops_verdict():
    """`plot`'s curves: hidden tests by iteration (programming), the gold answer standing
    after each trial (an LLM judge), the verdict only where it is exact match."""
    code = [
        {"solved": True, "evaluations": [{}], "pass_by_iteration": [False]},
        {"solved": False, "evaluations": [{}, {}], "pass_by_iteration": [False, True]},
    ]
    assert family_tables.truth_curve(code, 3) == [0.0, 0.5, 0.5]
    judged = [
        {"solved": True, "evaluations": [{}], "gold": [False], "gold_final": False},
        {"solved": True, "evaluations": [{}, {}], "gold": [False, True], "gold_final": True},
    ]
    assert family_tables.truth_curve(judged, 2) == [0.0, 0.5]
    exact = [{"solved": True, "evaluations": [{}, {}]}, {"solved": False, "evaluations": [{}]}]
    assert family_tables.truth_curve(exact, 2) == [0.0, 0.5]
