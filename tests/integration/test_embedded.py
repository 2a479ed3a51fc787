"""The loop, the CLI and the model presets with the real embedded models (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.core.context import DEFAULT_MODEL, Context
from reflexion.graphs.qa import qa_builder, react_builder
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.harness.cli.one_thread import installed_presets
from reflexion.models.providers import PRESETS, resolve_preset
from reflexion.qa.context import QAContext, ReActContext
from tests.clikit import reflexion

pytestmark = pytest.mark.integration

TEST_MODEL = "local:smollm2-135m"
"""The smallest preset: the embedded model these tests run."""

SMALL = Context(
    actor_model=TEST_MODEL,
    evaluator_model=TEST_MODEL,
    reflector_model=TEST_MODEL,
    max_trials=2,
    memory_size=1,
    temperature=0.7,
    max_tokens=128,
)


def two_failed_trials(graph: Any, task: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Run ``task``, whose reference no model produces, on a fresh thread: a failure, a
    reflection and a second trial; the thread's final state."""
    config = {"configurable": {"thread_id": "it-two-trials"}}
    nodes = [
        node
        for update in graph.stream(task, config, context=ctx, stream_mode="updates")
        for node in update
    ]
    assert nodes == ["actor", "evaluator", "reflector", "actor", "evaluator", "select_answer"]
    return graph.get_state(config).values


def bench_with_plot(tmp_path: Path, plot: str, *args: str) -> str:
    """``reflexion bench ARGS`` run in ``tmp_path``, its thread database there; the plot it
    writes to ``tmp_path / plot`` must be a PNG. The command's output."""
    done = reflexion(
        "bench", *args, "--plot", str(tmp_path / plot), "--db", str(tmp_path / "t.sqlite"),
        cwd=tmp_path,
    )  # fmt: skip
    assert (tmp_path / plot).read_bytes()[:4] == b"\x89PNG"
    return done.stdout


def test_two_trials_with_the_real_smallest_model():
    q = load_hotpotqa(limit=1)[0]
    graph = qa_builder().compile(checkpointer=InMemorySaver())
    task = {"task": q.question, "passages": gold_passages(q), "reference": "zq-unreachable-answer"}
    state = two_failed_trials(graph, task, SMALL)
    assert state["trial"] == 2
    assert [e["trial"] for e in state["evaluations"]] == [1, 2]
    assert all(not e["success"] for e in state["evaluations"])
    assert len(state.get("reflections", [])) <= 1
    assert all(isinstance(r, str) and r for r in state.get("reflections", []))


def test_react_with_reflexion_for_two_trials_on_the_default_model():
    q = load_hotpotqa(limit=1, offset=3)[0]
    graph = react_builder().compile(checkpointer=InMemorySaver())
    ctx = ReActContext(max_trials=2, max_steps=3, strategy="reflexion", max_tokens=160)
    assert ctx.actor_model == DEFAULT_MODEL
    state = two_failed_trials(
        graph, {"task": q.question, "reference": "zq-unreachable-answer"}, ctx
    )
    assert [e["trial"] for e in state["evaluations"]] == [1, 2]
    # Each trial searched the offline corpus first (the embedded grammar makes step 1 a Search).
    trajectory = state["trajectory"]
    assert trajectory[1].startswith("Action: Search[")
    assert trajectory[2].startswith("Observation: ")
    assert len(state["reflections"]) == 1 and state["reflections"][0]
    for record in state["evaluations"]:
        assert record["success"] is False
        assert record["feedback"].startswith("Answer is INCORRECT")


def test_cli_react_bench_two_strategies_writes_results_and_a_plot(tmp_path):
    out = bench_with_plot(
        tmp_path, "curve.png",
        "hotpotqa", "--agent", "react",
        "-n", "1", "-t", "1", "--max-steps", "2", "-m", TEST_MODEL,
        "--strategy", "none,reflexion",
    )  # fmt: skip
    assert "react none: solved" in out and "react reflexion: solved" in out
    results = sorted((tmp_path / "runs").glob("hotpotqa-react-*.jsonl"))
    assert len(results) == 2
    for path in results:
        finals = [json.loads(x) for x in path.read_text().splitlines() if '"final"' in x]
        assert len(finals) == 1 and finals[0]["settings"]["agent"] == "react"


@pytest.mark.parametrize("name", [p.name for p, ok in installed_presets() if ok])
def test_installed_presets_assemble_and_verify(name):
    path = resolve_preset(name)
    assert path.is_file()
    if PRESETS[name].size:
        assert path.stat().st_size == PRESETS[name].size


def test_cli_bench_prints_trials_summary_and_resumes(tmp_path):
    out, db = tmp_path / "r.jsonl", tmp_path / "t.sqlite"
    cmd = ("bench", "hotpotqa", "-n", "1", "-t", "2", "-m", TEST_MODEL)
    cmd += ("--output", str(out), "--db", str(db))
    first = reflexion(*cmd)
    assert "trial 1:" in first.stdout
    assert "cumulative accuracy" in first.stdout
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    finals = [row for row in lines if row["type"] == "final"]
    assert len(finals) == 1
    assert len(finals[0]["evaluations"]) in (1, 2)
    # Same command again: the finished question is skipped, nothing is appended but nothing lost.
    second = reflexion(*cmd)
    assert "trial 1:" not in second.stdout
    assert [json.loads(line) for line in out.read_text().splitlines()] == lines
    # The thread is inspectable by id.
    show = reflexion("show", finals[0]["thread_id"], "--db", str(db), timeout=120)
    assert "final answer" in show.stdout
    assert Path(db).is_file()


def test_programming_solves_an_easy_humaneval_problem_with_the_default_model():
    from reflexion.graphs.programming import programming_builder
    from reflexion.harness.bench.datasets import load_problems
    from reflexion.harness.scoring.programming import score_thread

    problem = next(p for p in load_problems("humaneval") if p.task_id == "HumanEval/53")  # add
    graph = programming_builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "it-code"}}
    ctx = Context(max_trials=2, memory_size=1, temperature=0.0, max_tokens=512)
    task = {"task": problem.prompt, "entry_point": problem.entry_point, "language": "py"}
    graph.invoke(task, config, context=ctx)
    state = graph.get_state(config).values
    assert state["tests"], "the model wrote no valid test"
    assert all(t.startswith("assert add(") for t in state["tests"])
    scored = score_thread(problem, state["evaluations"], 2)
    assert scored["hidden_pass"], state["evaluations"]


def test_cli_programming_bench_reports_pass_at_1_and_table_two(tmp_path):
    out = bench_with_plot(
        tmp_path, "pass.png",
        "programming", "--dataset", "humaneval",
        "--offset", "53", "-n", "1", "--max-iters", "2", "--loop", "simple,reflexion",
    )  # fmt: skip
    assert "pass@1" in out and "TP" in out
    samples = sorted((tmp_path / "runs").glob("programming-py-*-samples.jsonl"))
    assert len(samples) == 2
    row = json.loads(samples[0].read_text().splitlines()[0])
    assert row["task_id"] == "HumanEval/53" and "def add" in row["completion"]


def test_a_prompt_and_a_seed_draw_the_same_text_after_any_history():
    """Paired strategies fork one trial 1 and must draw alike where their prompts agree: the
    same prompt and seed give one text whether the context just ran that prompt (all of it
    cached), another question (the examples cached) or nothing."""
    from reflexion.core.state import State
    from reflexion.models.providers import embedded_model
    from reflexion.nodes.qa.actor import cot_messages

    first, other = load_hotpotqa(limit=2)
    prompts = [
        cot_messages(
            State(task=q.question, passages=gold_passages(q)), QAContext(), with_passages=True
        )
        for q in (first, other)
    ]
    model = embedded_model(
        TEST_MODEL.removeprefix("local:"), temperature=0.9, max_tokens=48, seed=11,
        slot="aligned-history",
    )  # fmt: skip
    drawn = [model.invoke(prompts[0]).text]  # cold
    drawn.append(model.invoke(prompts[0]).text)  # right after itself
    model.invoke(prompts[1])
    drawn.append(model.invoke(prompts[0]).text)  # after another question
    assert len(set(drawn)) == 1, drawn


def test_measure_loop_on_the_example_tasks_with_the_embedded_model(tmp_path):
    """A small real run of ``measure_loop``: two of the example tasks, two trials, the
    default embedded model; every strategy has its row, paired on the same tasks, and a
    second call resumes from the results files without a model call."""
    from reflexion.harness.cli.own import measure_loop

    example = Path(__file__).parents[2] / "docs" / "examples" / "word-problems.jsonl"
    ctx = Context(max_trials=2, memory_size=1, max_tokens=128)
    args = {"context": ctx, "db": str(tmp_path / "t.sqlite"), "output_dir": tmp_path, "limit": 2}
    measured = measure_loop(example, "reflexion", **args)
    rows = {r.strategy: r for r in measured.rows}
    assert set(rows) == {"none", "resample", "reflexion"}
    assert all(r.tasks == 2 for r in rows.values())
    assert rows["none"].solved <= min(rows["resample"].solved, rows["reflexion"].solved)
    assert rows["reflexion"].tokens
    again = measure_loop(example, "reflexion", **args)
    assert [r.solved for r in again.rows] == [r.solved for r in measured.rows]


def test_the_readme_example_offline_gives_what_the_readme_says(capsys):
    """The README's embedding example with its offline model (the comment's
    ``local:qwen2.5-coder-0.5b`` in place of the hosted one) prints what the README shows:
    ``'1011'`` in all three trials, and a reflection that restates it."""
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert code is not None
    offline = re.sub(
        r"^model = init_chat_model\([^)]*\).*$",
        'model = "local:qwen2.5-coder-0.5b"',
        code.group(1),
        flags=re.MULTILINE,
    )
    exec(compile(offline, "README example", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    for trial in (1, 2, 3):
        assert f"trial {trial}: '1011' success=False" in out, out
    assert "23 * 47 is 1011, not 1011" in out and "1011 False 3" in out, out
    assert "`'1011'` in all three trials" in readme and '"23 * 47 is 1011, not 1011"' in readme
