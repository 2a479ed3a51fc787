"""Paired comparisons: each question's trial 1 runs once, on a shared thread, and every strategy
continues from a fork of that checkpoint (fake models, a real SQLite checkpointer)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.qa import qa_builder
from reflexion.harness.bench.driver import run_benchmark
from reflexion.harness.bench.family_tables import qa_paired
from reflexion.harness.bench.ledger import BenchTask, Sink, finished_tasks
from reflexion.harness.checkpoints import annotate_head, fork_thread
from reflexion.harness.cli.app import main
from reflexion.harness.fakes import RuleChatModel
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext

QUESTIONS = {f"q{i}": (f"What is item {i}?", f"answer {i}") for i in range(3)}


class Actor:
    """Without a lesson in the prompt (trial 1, and every trial of strategy ``none``): a guess
    that differs on every call, so two separately sampled first trials could never agree;
    with one: the right answer. ``easy`` questions are right at once."""

    def __init__(self, easy: frozenset[str] = frozenset()) -> None:
        self.first_calls: list[str] = []
        self.calls = 0
        self.easy = easy

    def __call__(self, messages: list[BaseMessage]) -> str:
        self.calls += 1
        text = messages[-1].text
        number = re.findall(r"What is item (\d+)\?", text)[-1]
        if f"q{number}" in self.easy:
            return f"Thought: easy.\nAction: Finish[answer {number}]"
        if "- lesson" in text:
            return f"Thought: ok.\nAction: Finish[answer {number}]"
        self.first_calls.append(number)
        return f"Thought: guess.\nAction: Finish[guess {len(self.first_calls)}]"


def graph_with(saver: Any, actor: Actor) -> Any:
    reflector = RuleChatModel(rule=lambda _m: "Reflection: lesson learned.")
    return qa_builder(
        with_passages=False, actor_model=RuleChatModel(rule=actor), reflector_model=reflector
    ).compile(checkpointer=saver)


def run(graph: Any, strategy: str, out: Path, ids: list[str]) -> list[dict[str, Any]]:
    tasks = [
        BenchTask(
            thread_id=f"{strategy}-{i}",
            input={"task": QUESTIONS[i][0], "passages": "", "reference": QUESTIONS[i][1]},
            label=i,
            meta={"task_id": i},
            fork_from=f"first-{i}",
        )
        for i in ids
    ]
    with out.open("a", encoding="utf-8") as handle:
        finals, errors = run_benchmark(
            graph,
            tasks,
            QAContext(max_trials=3, strategy=strategy, retry="informed"),  # type: ignore[arg-type]
            Sink(handle),
            settings={"strategy": strategy},
            done=finished_tasks(out),
        )
    assert errors == []
    return finals


def test_every_strategy_continues_from_the_same_first_trial(saver, tmp_path):
    actor = Actor()
    graph = graph_with(saver, actor)
    none = run(graph, "none", tmp_path / "none.jsonl", ["q0", "q1"])
    assert actor.calls == 6  # three trials per question
    reflexion = run(graph, "reflexion", tmp_path / "reflexion.jsonl", ["q0", "q1"])
    assert actor.calls == 8  # trial 2 of each question: trial 1 is not run again
    for a, b in zip(none, reflexion, strict=True):
        assert a["evaluations"][0] == b["evaluations"][0]
        assert a["evaluations"][0]["answer"].startswith("guess")
    assert [f["solved"] for f in none] == [False, False]
    assert [f["solved"] for f in reflexion] == [True, True]
    assert [len(f["evaluations"]) for f in reflexion] == [2, 2]
    # trial 1 ran once, but counts in each strategy's totals: what that strategy costs alone
    assert [f["usage"]["actor"]["calls"] for f in none] == [3, 3]
    assert [f["usage"]["actor"]["calls"] for f in reflexion] == [2, 2]
    assert not any(f["resumed"] for f in [*none, *reflexion])  # a new fork is not a resume
    # the trial-1 line is in each strategy's results file, marked shared, with its usage
    rows = [json.loads(ln) for ln in (tmp_path / "reflexion.jsonl").read_text().splitlines()]
    firsts = [r for r in rows if r["type"] == "trial" and r["trial"] == 1]
    assert len(firsts) == 2 and all(r["shared"] for r in firsts)
    assert [r["usage"]["actor"]["calls"] for r in firsts] == [1, 1]
    assert not any(r.get("recovered") for r in firsts)


def test_a_question_solved_at_trial_1_is_solved_by_every_strategy_once(saver, tmp_path):
    actor = Actor(easy=frozenset({"q2"}))
    graph = graph_with(saver, actor)
    finals = [run(graph, s, tmp_path / f"{s}.jsonl", ["q2"])[0] for s in ("none", "reflexion")]
    assert all(f["solved"] and f["trials"] == 1 for f in finals)
    assert actor.calls == 1


def test_a_later_run_reuses_the_stored_first_trial(saver, tmp_path):
    run(graph_with(saver, Actor()), "none", tmp_path / "none.jsonl", ["q0"])
    later = Actor()
    finals = run(graph_with(saver, later), "reflexion", tmp_path / "reflexion.jsonl", ["q0"])
    assert later.first_calls == [] and finals[0]["evaluations"][0]["answer"] == "guess 1"
    # what the stored trial cost was kept with it, and counts for the later run too
    first = finals[0]["usage"]["actor"]
    assert first["calls"] == 2  # the stored trial's call and the retry's


def test_a_fork_interrupted_after_its_shared_trial_counts_it_once_on_resume(saver, tmp_path):
    out = tmp_path / "reflexion.jsonl"
    run(graph_with(saver, Actor()), "none", tmp_path / "none.jsonl", ["q0"])
    finals = run(graph_with(saver, Actor()), "reflexion", out, ["q0"])
    whole = finals[0]["usage"]
    # Drop the final line, as if the process died after the retry: the rerun resumes the
    # thread and adds the lines already written (the shared trial's among them) once.
    lines = out.read_text().splitlines()
    out.write_text("\n".join(ln for ln in lines if '"type": "final"' not in ln) + "\n")
    again = run(graph_with(saver, Actor()), "reflexion", out, ["q0"])
    assert again[0]["usage"]["actor"]["calls"] == whole["actor"]["calls"] == 2


def first_trial_on(graph: Any, config: dict[str, Any]) -> None:
    """Question q0's first trial on the thread of ``config``, stopped before the reflector."""
    graph.invoke(
        {"task": QUESTIONS["q0"][0], "passages": "", "reference": QUESTIONS["q0"][1]},
        config,
        context=QAContext(max_trials=3, retry="informed"),
        interrupt_before=["reflector"],
    )


def test_fork_leaves_its_source_as_it_was():
    saver = InMemorySaver()
    graph = graph_with(saver, Actor())
    run_first = {"configurable": {"thread_id": "src"}}
    first_trial_on(graph, run_first)
    fork_thread(saver, "src", "copy")
    assert graph.get_state({"configurable": {"thread_id": "copy"}}).next == ("reflector",)
    graph.invoke(
        None,
        {"configurable": {"thread_id": "copy"}},
        context=QAContext(max_trials=3, retry="informed"),
    )
    source = graph.get_state(run_first)
    assert source.next == ("reflector",) and source.values["trial"] == 1
    copy = graph.get_state({"configurable": {"thread_id": "copy"}})
    assert copy.values["trial"] == 2 and copy.values["solved"] is True
    assert copy.config["configurable"]["thread_id"] == "copy"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_annotating_a_thread_adds_metadata_and_changes_nothing_else(kind, saver):
    saver = InMemorySaver() if kind == "memory" else saver
    graph = graph_with(saver, Actor())
    config = {"configurable": {"thread_id": "src"}}
    first_trial_on(graph, config)
    before = graph.get_state(config)
    history = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]
    annotate_head(saver, "src", {"shared_usage": {"actor": {"calls": 1}}})
    after = graph.get_state(config)
    assert after.values == before.values and after.next == before.next
    assert after.metadata["shared_usage"] == {"actor": {"calls": 1}}
    assert after.metadata["step"] == before.metadata["step"]
    assert [
        s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)
    ] == history
    with pytest.raises(ReflexionError, match="no checkpoint"):
        annotate_head(saver, "missing", {})


def test_forking_a_thread_that_does_not_exist_is_a_clear_error():
    with pytest.raises(ReflexionError, match="no checkpoint"):
        fork_thread(InMemorySaver(), "missing", "copy")


def test_paired_table_counts_fixes_after_trial_1_and_against_none():
    def final(task: str, first: bool, solved: bool) -> dict[str, Any]:
        return {"task_id": task, "solved": solved, "evaluations": [{"success": first}]}

    copied = "I confused where the opera premiered with where its composer was born."
    results = {
        "cot none": [final("a", True, True), final("b", False, False), final("c", False, True)],
        "cot reflexion": [
            final("a", True, True),
            {**final("b", False, True), "reflections": [copied, "I misread the year."]},
            final("c", False, True),
        ],
    }
    table = qa_paired(results, "cot none")
    cells = [[str(c) for c in col.cells] for col in table.columns]
    rows = list(zip(*cells, strict=True))
    assert rows[0] == ("cot none", "3", "1", "2", "1", "-", "-", "-", "-")
    assert rows[1] == ("cot reflexion", "3", "1", "3", "2", "+1/−0", "1", "-", "1/2")


def test_runs_share_first_trials_when_they_differ_only_after_trial_1():
    from reflexion.harness.bench.settings import first_trial_key

    base = {"bench": "programming", "strategy": "reflexion", "max_trials": 4, "test_trust": "all"}
    later = {**base, "strategy": "none", "max_trials": 8, "repeat_guard": 0, "memory_size": 3}
    assert first_trial_key(base) == first_trial_key(later)
    assert first_trial_key(base) != first_trial_key({**base, "test_trust": "held_out"})
    assert first_trial_key(base) != first_trial_key({**base, "temperature": 0.0})
    assert first_trial_key(base) == first_trial_key({**base, "temperature": 0.7})  # reference


def finals_file(path: Path, tasks: str, passed: str) -> Path:
    """A results file of ``final`` lines: task ``tasks[i]`` passed the hidden tests when
    ``passed[i]`` is ``1``."""
    rows = [
        {"type": "final", "thread_id": f"{path.stem}-{t}", "task_id": t, "hidden_pass": ok == "1"}
        for t, ok in zip(tasks, passed, strict=True)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def compare_output(monkeypatch, capsys, *args: str) -> str:
    """What `reflexion compare ARGS` prints at 80 columns (it must exit cleanly)."""
    monkeypatch.setattr(sys, "argv", ["reflexion", "compare", *args])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)
    return str(capsys.readouterr().out)


def test_compare_pairs_two_results_files_by_task(tmp_path, monkeypatch, capsys):
    base = finals_file(tmp_path / "programming-py-repair-1a.jsonl", "abcde", "10010")
    other = finals_file(tmp_path / "programming-py-fresh-2b.jsonl", "abcde", "11100")
    out = compare_output(monkeypatch, capsys, str(base), str(other))
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("fresh"))
    assert row.split() == ["fresh-2b", "5", "2", "3", "2", "1", "1"]  # the shared words cut


def test_compare_chain_pairs_each_run_with_the_one_before_and_counts_broken_first(
    tmp_path, monkeypatch, capsys
):
    simple = finals_file(tmp_path / "programming-py-simple-1a.jsonl", "abcd", "1100")
    resample = finals_file(tmp_path / "programming-py-resample-2b.jsonl", "abcd", "1110")
    reflexion = finals_file(tmp_path / "programming-py-reflexion-3c.jsonl", "abcd", "0111")
    rows = [json.loads(line) for line in reflexion.read_text().splitlines()]
    for row in rows:  # a right first attempt (task a) that the loop broke
        row["pass_by_iteration"] = [row["task_id"] == "a", row["hidden_pass"]]
    reflexion.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = compare_output(monkeypatch, capsys, "--chain", *map(str, (simple, resample, reflexion)))
    assert "paired against simple-1a" in out and "paired against resample-2b" in out
    pairs = [
        ln.split() for ln in out.splitlines() if ln.strip().startswith(("resample", "reflexion"))
    ]
    assert ["resample-2b", "4", "2", "3", "1", "0", "1"] in pairs
    assert ["reflexion-3c", "4", "3", "3", "1", "1", "1"] in pairs
    summary = next(r for r in pairs if len(r) > 3 and r[2] == "0.75" and r[0] == "reflexion-3c")
    assert summary[4] == "1"  # broken first


def test_run_labels_cut_the_shared_words_and_keep_same_stems_apart():
    from reflexion.harness.cli.results import run_labels

    a, b = Path("runs/alfworld-heuristic-none-1.jsonl"), Path("runs/alfworld-heuristic-no-2.jsonl")
    assert run_labels([a, b]) == ["none-1", "no-2"]  # cut at a whole word
    assert run_labels([a]) == ["alfworld-heuristic-none-1"]
    assert run_labels([a, Path("old") / a.name]) == [str(a), str(Path("old") / a.name)]


def test_options_that_cannot_act_stay_out_of_a_strategys_results_key():
    from dataclasses import replace

    from reflexion.harness.bench.settings import result_settings

    reflector_only = {"reflector_model": "local:qwen2.5-coder-1.5b"}
    none = AlfworldContext(strategy="none", alfworld_memory="reflection")
    assert result_settings(replace(none, **reflector_only)) == result_settings(none)
    reflexion = AlfworldContext(strategy="reflexion", alfworld_memory="reflection")
    assert result_settings(replace(reflexion, **reflector_only)) != result_settings(reflexion)


@pytest.mark.parametrize("cls", [QAContext, ReActContext, CodeContext])
def test_the_repeat_guard_is_named_at_a_value_other_than_the_papers(cls):
    """repeat_guard (the redraws of a rejected answer, a repeated ReAct search or repeated
    code) is a setting of every run, and in its name at a value other than the paper's (0)."""
    from reflexion.harness.bench.naming import tokens
    from reflexion.harness.bench.settings import result_settings

    assert result_settings(cls(strategy="reflexion"))["repeat_guard"] == 2
    assert "repeat_guard=2" in tokens(result_settings(cls(strategy="reflexion")))
    paper = tokens(result_settings(cls(strategy="reflexion", repeat_guard=0)))
    assert not any(t.startswith("repeat_guard") for t in paper)


def test_repeated_counts_retries_that_give_a_rejected_answer_again():
    from reflexion.harness.bench.family_tables import (
        repeated,
    )

    def final(*answers: tuple[str, bool]) -> dict:
        return {"evaluations": [{"answer": a, "success": ok} for a, ok in answers]}

    finals = [
        final(("Elbe", False), ("the Elbe", False), ("Vltava", True)),  # 1 repeat of 2
        final(("Rhine", False), ("Danube", False), ("rhine.", False)),  # 1 of 2
        final(("Oder", True)),  # no retry
    ]
    assert repeated(finals) == "2/4"
    assert repeated([final(("Oder", True))]) == "-"


def test_compare_by_slices_counts_each_slice_in_the_baselines_order(tmp_path, monkeypatch, capsys):
    base = finals_file(tmp_path / "simple-1a.jsonl", "abcde", "10101")
    # the other run finished its tasks in another order; the slices follow the baseline's
    other = finals_file(tmp_path / "fresh-2b.jsonl", "edcba", "11011")
    out = compare_output(monkeypatch, capsys, str(base), str(other), "--slices", "2")
    out = out.split("slices of 2")[1]
    rows = [ln.split() for ln in out.splitlines() if "–" in ln]
    assert rows == [
        ["fresh-2b", "1–2", "1", "2", "1", "0"],
        ["3–4", "1", "1", "1", "1"],
        ["5–5", "1", "1", "0", "0"],
    ]


def test_compare_names_the_lines_of_a_results_file_that_are_not_json(tmp_path, monkeypatch, capsys):
    base = finals_file(tmp_path / "base.jsonl", "abc", "111")
    lines = base.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(lines[0] + "\n" + lines[1][:20] + "\n" + lines[2] + '\n{"type": "fin')
    out = compare_output(monkeypatch, capsys, str(base), str(damaged))
    assert "damaged.jsonl: 2 line(s) not JSON, skipped (line 2, 4)" in " ".join(out.split())
    assert "base.jsonl" not in out.split("paired against")[0]  # an intact file gets no note


@pytest.mark.parametrize("strategy", ["none", "last_attempt"])
def test_a_reflector_model_does_not_rename_a_strategy_without_reflections(strategy):
    """No reflector runs under these strategies, so ``--role-model reflector=…`` keeps the
    results file (and its finished tasks) of the same run without it; under ``reflexion``
    the reflector's model names a run of its own."""
    from dataclasses import replace

    from reflexion.harness.bench.settings import result_settings

    def key(ctx: Context) -> dict[str, Any]:
        return result_settings(ctx)  # as bench hotpotqa names it

    base = QAContext(strategy=strategy, actor_model="local:a", reflector_model="local:a")
    assert key(replace(base, reflector_model="local:b")) == key(base)
    reflexion = replace(base, strategy="reflexion")
    assert key(replace(reflexion, reflector_model="local:b")) != key(reflexion)


def test_compare_says_at_which_attempt_each_difference_ends(tmp_path, monkeypatch, capsys):
    """Fixed tasks count at the run's attempt whose answer first passes the hidden tests,
    broken ones at the baseline's."""
    base = finals_file(tmp_path / "programming-py-resample-1a.jsonl", "abcd", "1100")
    run = finals_file(tmp_path / "programming-py-reflexion-2b.jsonl", "abcd", "0111")
    solved_at = {"base": {"a": 3, "b": 1}, "run": {"b": 1, "c": 2, "d": 4}}
    for path, key in ((base, "base"), (run, "run")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            at = solved_at[key].get(row["task_id"])
            row["pass_by_iteration"] = [at is not None and k >= at for k in range(1, 5)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = compare_output(monkeypatch, capsys, str(base), str(run))
    header = next(ln for ln in out.splitlines() if ln.split()[:2] == ["fixed", "fixed"])
    assert header.split().count("fixed") == 4  # attempts 1 to 4, the last difference's
    row = next(ln.split() for ln in out.splitlines() if ln.split()[:2] == ["reflexion-2b", "0"])
    # fixed: c at attempt 2, d at 4; broken: a, which the baseline solved at attempt 3
    assert row == ["reflexion-2b", "0", "1", "0", "1", "0", "0", "1", "0"]
