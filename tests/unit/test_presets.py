"""Presets: ``Context.paper()`` (and ``preset="paper"`` in a mapping, a graph's context or
``--preset paper`` on the CLI) runs the paper's loop, every addition off; the defaults keep
them. Scripted models, the real sandbox."""

from __future__ import annotations

import inspect
import uuid
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reflexion.alfworld.context import AlfworldContext
from reflexion.core.context import Context, context_from
from reflexion.core.errors import ReflexionError
from reflexion.core.presets import PRESET_NAMES, Preset, preset_values
from reflexion.graphs.programming import programming_builder
from reflexion.graphs.qa import qa_builder
from reflexion.harness.cli import alfworld, hotpotqa, one_thread, programming
from reflexion.harness.cli import bench as bench_cli
from reflexion.harness.cli.options import PRESET_OPTIONS
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.programming.context import CodeContext
from reflexion.qa.context import QAContext, ReActContext
from tests.clikit import cli, one_line_error
from tests.conftest import answer
from tests.unit.test_faults import server as server  # a fixture
from tests.unit.test_persistence import cli as run_cli

TASK = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava.",
    "reference": "Vltava",
    "task_id": "q-prague",
}
LESSON = "Reflection: The question names the city; read its sentence again."


def run_qa(actor: ScriptedChatModel, ctx: Context | dict[str, Any]) -> dict[str, Any]:
    reflector = ScriptedChatModel(replies=[LESSON])
    graph = qa_builder(actor_model=actor, reflector_model=reflector).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(TASK, config, context=ctx)
    return dict(graph.get_state(config).values)


# ---- the preset itself ------------------------------------------------------------------------


CONTEXTS = (Context, QAContext, ReActContext, CodeContext, AlfworldContext)
PAPER = {k: v for cls in CONTEXTS for k, v in preset_values("paper", cls).items()}
"""Every field the paper preset sets, over every graph's context."""


@pytest.mark.parametrize("cls", CONTEXTS, ids=lambda c: c.__name__)
def test_the_paper_preset_turns_every_addition_off_and_the_defaults_keep_them(cls):
    paper, names = cls.paper(), {f.name for f in fields(cls)}
    for name, value in preset_values("paper", cls).items():
        assert name in names, f"{cls.__name__}'s paper preset sets {name}, which it lacks"
        assert getattr(paper, name) == value, name
        assert getattr(cls(), name) != value, f"{name} is already the paper's by default"
    assert cls.paper(max_trials=2) == cls(preset="paper", max_trials=2)
    assert cls(preset="default") == cls()
    assert set(PRESET_NAMES) == set(get_args(Preset))


def test_a_preset_of_a_family_is_its_own_fields_over_the_base_s_and_the_core_names_none():
    assert preset_values("paper", Context) == {"select_answer": "last"}
    code = preset_values("paper", CodeContext)
    assert code["select_answer"] == "last" and code["retry"] == "informed"
    assert code["strategy"] == "last_attempt_and_reflexion" and "strategy" not in preset_values(
        "paper", QAContext
    )
    assert code["repeat_guard"] == 0 and "repeat_guard" not in preset_values(
        "paper", AlfworldContext
    )
    assert "alfworld_memory" not in code
    assert preset_values("default", AlfworldContext) == {}
    core = (Path(__file__).parents[2] / "reflexion" / "core" / "presets.py").read_text()
    assert not [n for n in PAPER if n != "select_answer" and f'"{n}"' in core]


def test_values_given_beside_a_preset_win():
    ctx = QAContext.paper(retry="informed_once", max_trials=2)
    assert (ctx.retry, ctx.max_trials) == ("informed_once", 2)
    assert ctx.repeat_guard == 0 and ctx.select_answer == "last"
    code = CodeContext.paper(internal_tests="examples")
    assert code.examples_decide and (code.retry, code.repairs) == ("informed", True)


def test_a_mapping_with_a_preset_starts_from_it():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "preset" is no unknown key
        ctx = context_from({"preset": "paper", "max_trials": 2}, QAContext)
    assert ctx == QAContext.paper(max_trials=2)
    assert ctx.max_trials == 2 and ctx.retry == "informed"
    with pytest.warns(UserWarning, match="bogus"):
        assert context_from({"preset": "paper", "bogus": 1}) == Context.paper()


def test_a_base_context_with_a_preset_gives_a_familys_graph_that_preset():
    """``Context.paper()`` handed to the programming graph: its own fields start from the
    paper preset too, not from the graph's defaults."""
    from types import SimpleNamespace

    from reflexion.core.context import get_context

    runtime = SimpleNamespace(context=Context.paper(max_trials=2))
    code = get_context(runtime, CodeContext)  # type: ignore[arg-type]
    assert code == CodeContext.paper(max_trials=2)
    # what the caller did not set is the graph's own default (its figures' configuration)
    runtime = SimpleNamespace(context=Context(max_trials=2, temperature=0.5))
    code = get_context(runtime, CodeContext)  # type: ignore[arg-type]
    assert (code.max_trials, code.temperature, code.memory_size) == (2, 0.5, 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Context(preset="nope"),  # type: ignore[arg-type]
        lambda: Context(preset="nope", max_trials=2),  # type: ignore[arg-type]
        lambda: context_from({"preset": "nope", "max_trials": 2}),
    ],
    ids=["Context", "Context with fields", "context_from"],
)
def test_a_bad_preset_name_is_a_one_line_error(make):
    with pytest.raises(ReflexionError) as caught:
        make()
    message = str(caught.value)
    assert "\n" not in message
    assert "'nope'" in message and "default" in message and "paper" in message


# ---- question answering -----------------------------------------------------------------------


def test_paper_qa_retries_with_the_memory_keeps_repeats_and_returns_the_last_attempt():
    replies = [answer("Elbe"), answer("the elbe."), answer("Danube")]
    actor = ScriptedChatModel(replies=replies)
    state = run_qa(actor, Context.paper(max_trials=3))
    assert [e["answer"] for e in state["evaluations"]] == ["Elbe", "the elbe.", "Danube"]
    assert len(actor.prompts) == 3  # one draw per trial: the repeat is kept, not redrawn
    assert "read its sentence again" in actor.prompt_text(1)  # the retry is drawn with memory
    assert state["answer"] == "Danube"  # the last attempt (best: the earliest of equals)

    # the defaults redraw the repeat and return the first of equally failed attempts
    actor = ScriptedChatModel(replies=replies)
    state = run_qa(actor, Context(max_trials=3))
    assert len(actor.prompts) > 3 and state["answer"] == "Elbe"


def test_a_graphs_plain_context_takes_a_preset():
    """LangGraph builds the context of invoke(context={...}) (and a server's JSON context)
    as Context(**mapping)."""
    actor = ScriptedChatModel(replies=[answer("Elbe"), answer("the elbe.")])
    state = run_qa(actor, {"preset": "paper", "max_trials": 2})
    assert len(actor.prompts) == 2
    assert "read its sentence again" in actor.prompt_text(1)
    assert state["answer"] == "the elbe."


# ---- programming ------------------------------------------------------------------------------

EXAMPLES = (
    'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n'
    '    >>> add(2, 3)\n    5\n    >>> add(0, 0)\n    0\n    """\n'
)


def code(body: str) -> str:
    return f"```python\ndef add(a: int, b: int) -> int:\n    return {body}\n```"


def test_paper_programming_writes_tests_repairs_and_returns_the_last_attempt():
    actor = ScriptedChatModel(replies=[code("a - b"), code("7")])
    tests_model = ScriptedChatModel(replies=["assert add(2, 3) == 5\nassert add(0, 0) == 0\n"])
    reflector = ScriptedChatModel(replies=["Reflection: I will check the arithmetic."])
    graph = programming_builder(
        actor_model=actor, evaluator_model=tests_model, reflector_model=reflector
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 50}
    start = {"task": EXAMPLES, "entry_point": "add", "language": "py", "task_id": "t/0"}
    graph.invoke(start, config, context=Context.paper(max_trials=2))
    state = dict(graph.get_state(config).values)
    assert len(tests_model.prompts) == 1  # no trusted example tests: the model writes them
    assert state["tests"] == ["assert add(2, 3) == 5", "assert add(0, 0) == 0"]
    assert [e["score"] for e in state["evaluations"]] == [0.5, 0.0]
    assert "return a - b" in actor.prompt_text(1)  # the retry repairs the previous code
    assert "return 7" in state["answer"]  # the last attempt, though the first scored better


# ---- the command line -------------------------------------------------------------------------


@pytest.fixture
def _workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


BENCHES = [hotpotqa.bench_hotpotqa, programming.bench_programming, alfworld.bench_alfworld]


BENCH_CONTEXTS: dict[Any, tuple[type[Context], ...]] = {
    hotpotqa.bench_hotpotqa: (QAContext, ReActContext),
    programming.bench_programming: (CodeContext,),
    alfworld.bench_alfworld: (AlfworldContext,),
}
"""The contexts each bench command runs its variants with."""


@pytest.mark.parametrize("command", BENCHES, ids=lambda c: c.__name__)
def test_each_preset_option_defaults_to_the_contexts_default(command):
    """An option in PRESET_OPTIONS sets its field: its default must be the field's default
    (or its negation), so a preset that leaves it alone leaves the field alone; None where
    the command's contexts default the field differently (each keeps its own)."""
    for param in inspect.signature(command).parameters.values():
        if param.name in PRESET_OPTIONS:
            name, as_option = PRESET_OPTIONS[param.name]
            defaults = {getattr(cls(), name) for cls in BENCH_CONTEXTS[command]}
            if len(defaults) > 1:
                assert param.default is None, param.name
                continue
            (default,) = defaults
            assert param.default == as_option(default), param.name


@pytest.mark.usefixtures("_workdir")
@pytest.mark.parametrize(
    "args",
    [
        ["run", "Q?", "--reference", "a", "--preset", "nope"],
        ["bench", "hotpotqa", "--preset", "nope"],
        ["bench", "programming", "--preset", "nope"],
        ["bench", "alfworld", "--preset", "nope"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_bad_preset_on_the_command_line(monkeypatch, capsys, args):
    code, err = cli(monkeypatch, capsys, *args)
    one_line_error(code, err, "--preset", "nope", "default, paper")


def captured_contexts(monkeypatch, capsys, *args: str) -> list[Context]:
    """The contexts a bench command would run its variants with (it stops there)."""
    seen: list[Context] = []

    def stop(family: Any, variants: list[bench_cli.Variant], *a: Any, **kw: Any) -> Any:
        seen.extend(v.ctx for v in variants)
        raise ReflexionError("stopped before running")

    monkeypatch.setattr(bench_cli, "run_variants", stop)
    code, err = cli(monkeypatch, capsys, *args)
    assert code == 2 and "stopped before running" in err, err
    return seen


@pytest.mark.usefixtures("_workdir")
def test_bench_hotpotqa_preset_paper_with_an_option_given(monkeypatch, capsys):
    args = ["bench", "hotpotqa", "-n", "1", "--strategy", "reflexion,resample"]
    reflexion, resample = captured_contexts(monkeypatch, capsys, *args, "--preset", "paper")
    for name, value in preset_values("paper", type(reflexion)).items():
        if name != "retry":
            assert getattr(reflexion, name) == getattr(resample, name) == value, name
    # programming's paper strategy is its own: a question run keeps the one it was given
    assert (reflexion.strategy, resample.strategy) == ("reflexion", "none")
    assert reflexion.retry == "informed"
    assert resample.retry == "resample"  # the baseline stays itself
    given = ["--preset", "paper", "--repeat-guard", "1"]
    (ctx,) = captured_contexts(monkeypatch, capsys, *args[:-1], "reflexion", *given)
    assert ctx.repeat_guard == 1 and ctx.retry == "informed"
    (default,) = captured_contexts(monkeypatch, capsys, *args[:-1], "reflexion")
    fresh = type(default)()
    assert all(getattr(default, n) == getattr(fresh, n) for n in PAPER if hasattr(default, n))


@pytest.mark.usefixtures("_workdir")
def test_bench_programming_preset_paper_with_an_option_given(monkeypatch, capsys):
    args = ["bench", "programming", "--dataset", "humaneval-py", "-n", "1"]
    args += ["--loop", "reflexion", "--preset", "paper"]
    (ctx,) = captured_contexts(monkeypatch, capsys, *args)
    assert (ctx.retry, ctx.strategy, ctx.internal_tests) == (
        "informed",
        "last_attempt_and_reflexion",
        "all",
    )
    assert (ctx.select_answer, ctx.repeat_guard) == ("last", 0)
    assert not hasattr(ctx, "max_steps")  # the programming graph's context has no QA field
    given = ["--retry", "informed_once", "--select", "best"]
    (ctx,) = captured_contexts(monkeypatch, capsys, *args, *given)
    assert (ctx.retry, ctx.select_answer, ctx.internal_tests) == ("informed_once", "best", "all")
    (ctx,) = captured_contexts(monkeypatch, capsys, *args, "--no-reflection")
    assert ctx.strategy == "last_attempt" and ctx.repairs  # the paper's repair, no reflection
    (ctx,) = captured_contexts(monkeypatch, capsys, *args, "--no-repair", "--no-example-tests")
    assert (ctx.strategy, ctx.internal_tests) == ("reflexion", "all")


@pytest.mark.usefixtures("_workdir")
@pytest.mark.parametrize(
    ("given", "strategy", "tests"),
    [
        ([], "reflexion", "examples"),
        (["--repair"], "last_attempt_and_reflexion", "examples"),
        (["--repair", "--no-reflection"], "last_attempt", "examples"),
        (["--no-reflection"], "none", "examples"),
        (["--no-example-tests"], "reflexion", "held_out"),
        (["--internal-tests", "all"], "reflexion", "all"),
        (["--no-example-tests", "--internal-tests", "all"], "reflexion", "all"),
    ],
)
def test_bench_programmings_repair_and_test_options_set_the_strategy_and_internal_tests(
    monkeypatch, capsys, given, strategy, tests
):
    args = ["bench", "programming", "--dataset", "humaneval-py", "-n", "1"]
    reflexion, resample = captured_contexts(
        monkeypatch, capsys, *args, "--loop", "reflexion,resample", *given
    )
    assert (reflexion.strategy, reflexion.internal_tests) == (strategy, tests)
    assert (resample.strategy, resample.internal_tests) == ("none", tests)  # never repairs


@pytest.mark.usefixtures("_workdir")
def test_no_example_tests_beside_internal_tests_examples_is_refused(monkeypatch, capsys):
    args = ["bench", "programming", "--dataset", "humaneval-py", "-n", "1"]
    code, err = cli(
        monkeypatch, capsys, *args, "--no-example-tests", "--internal-tests", "examples"
    )
    one_line_error(code, err, "--no-example-tests", "--internal-tests examples")


@pytest.mark.usefixtures("_workdir")
def test_bench_alfworld_preset_paper_with_an_option_given(monkeypatch, capsys):
    monkeypatch.setattr(alfworld, "engine_available", lambda: True)
    args = ["bench", "alfworld", "-n", "1", "--strategy", "reflexion", "--preset", "paper"]
    (ctx,) = captured_contexts(monkeypatch, capsys, *args)
    assert (ctx.alfworld_memory, ctx.alfworld_explain) == ("reflection", False)
    assert ctx.select_answer == "last"
    (ctx,) = captured_contexts(monkeypatch, capsys, *args, "--memory-entry", "sightings")
    assert ctx.alfworld_memory == "sightings" and ctx.alfworld_explain is False


@pytest.mark.usefixtures("_workdir")
def test_run_preset_paper_with_an_option_given(monkeypatch, capsys):
    seen: list[Context] = []

    def stop(graph: Any, thread_id: str, task_input: Any, ctx: Context, metadata: Any) -> None:
        seen.append(ctx)

    monkeypatch.setattr(one_thread, "resolve_models", lambda ctx: None)
    monkeypatch.setattr(one_thread, "_run_to_end", stop)
    args = ["run", "Q?", "--reference", "a", "--db", ":memory:", "--preset", "paper"]
    assert cli(monkeypatch, capsys, *args)[0] == 0
    assert cli(monkeypatch, capsys, *args, "--retry", "informed_once")[0] == 0
    paper, given = seen
    assert paper == QAContext.paper()  # every other option at its default
    assert given.retry == "informed_once" and given.repeat_guard == 0


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_resumed_thread_keeps_its_preset(server, tmp_path, monkeypatch, capsys):
    """A thread started under --preset paper resumes under it; another --preset is refused."""
    db = str(tmp_path / "t.sqlite")
    server.script(["ok:Thought: hmm.\nAction: Finish[wrong]", "400"])
    start = ["run", "What is item 1?", "--reference", "x", "--thread-id", "t", "--db", db]
    hosted = ["--model", "openai:any-name", "--base-url", server.base_url]
    code, _, _ = run_cli(monkeypatch, capsys, *start, *hosted, "--preset", "paper")
    assert code == 2
    resume = ["run", "--thread-id", "t", "--db", db]
    code, _, err = run_cli(monkeypatch, capsys, *resume, "--preset", "default")
    assert code == 2 and "started with another --preset" in err
    code, out, err = run_cli(monkeypatch, capsys, *resume, "--preset", "paper")
    assert code == 0 and "solved after 2 trial(s)" in out, err


def test_a_family_graphs_form_has_at_most_22_settings():
    """Studio's form lists a graph's context fields and ``preset``: a family keeps the fields
    a user of it would set (at most 22), and the generic graph the base's 16."""
    assert len(fields(Context)) + 1 == 16
    for cls in (QAContext, ReActContext, CodeContext, AlfworldContext):
        assert len(fields(cls)) + 1 <= 22, cls.__name__
