"""The ALFWorld agent with a scripted game and scripted models: turns, invalid commands,
the heuristic's thresholds, the LLM self-evaluator, the Ω = 3 window, resume by replay and
the failure classes of Figure 3b."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.sessions import EnvSessions
from reflexion.alfworld.turns import (
    Turn,
    classify_failure,
    hallucinated_actions,
    heuristic_trip,
    parse_turn,
)
from reflexion.core.context import Context
from reflexion.core.errors import ReflexionError
from reflexion.graphs.alfworld import alfworld_builder
from reflexion.harness.bench.driver import run_benchmark
from reflexion.harness.bench.ledger import BenchTask, Sink
from reflexion.harness.fakes import (
    RuleChatModel,
    ScriptedChatModel,
    ScriptedGame,
    SeededScriptedChatModel,
)
from reflexion.prompts import few_shot

GAME = "pick_and_place_simple-Mug-None-Shelf-1/trial_1"
WIN = [
    "think: The mug is probably on the countertop.",
    "go to countertop 1",
    "take mug 1 from countertop 1",
    "go to shelf 1",
    "move mug 1 to shelf 1",
]


@pytest.fixture
def games(tmp_path: Path) -> str:
    """A directory game set with one game of kind ``put`` (the scripted game ignores
    its content; the loader only needs the keys)."""
    game = tmp_path / "games" / GAME
    game.mkdir(parents=True)
    obj = {"pddl_domain": "(d)", "grammar": "{}", "pddl_problem": "(p)", "solvable": True}
    (game / "game.tw-pddl").write_text(json.dumps({**obj, "walkthrough": WIN[1:]}))
    return str(tmp_path / "games")


def recording_sessions() -> tuple[EnvSessions, list[ScriptedGame]]:
    """Sessions of scripted games, and the list of every game they made."""
    made: list[ScriptedGame] = []

    def factory() -> ScriptedGame:
        made.append(ScriptedGame())
        return made[-1]

    return EnvSessions(factory), made


def build(actor: Any, reflector: Any = None, judge: Any = None) -> tuple[Any, EnvSessions]:
    sessions = EnvSessions(ScriptedGame)
    graph = alfworld_builder(
        actor_model=actor,
        evaluator_model=judge,
        reflector_model=reflector or ScriptedChatModel(replies=["Reflection: go to shelf 1."]),
        sessions=sessions,
    ).compile(checkpointer=InMemorySaver())
    return graph, sessions


def run(graph: Any, ctx: Context, thread: str = "t1") -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    return graph.invoke({"game": GAME}, config, context=ctx)


def turns(*pairs: tuple[str, str]) -> list[Turn]:
    return [Turn(action=a, observation=o) for a, o in pairs]


# ---- parsing and the heuristic --------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "action", "think"),
    [
        ("go to countertop 1", "go to countertop 1", False),
        ("> Go to  Countertop 1.\nOn the countertop 1…", "go to countertop 1", False),
        ("Action: take mug 1 from countertop 1", "take mug 1 from countertop 1", False),
        ("think: First I find the Mug.", "think: First I find the Mug.", True),
        ("\n\n  > think:plan", "think: plan", True),
        ("", "", False),
        ("   \n  ", "", False),
    ],
)
def test_parse_turn(reply: str, action: str, think: bool) -> None:
    parsed = parse_turn(reply)
    assert (parsed.action, parsed.is_think) == (action, think)


def test_heuristic_trips_on_the_fourth_identical_action_and_observation() -> None:
    same = ("go to desk 1", "On the desk 1, you see nothing.")
    assert heuristic_trip(turns(*[same] * 3), repeats=3, max_actions=30) is None
    reason = heuristic_trip(turns(*[same] * 4), repeats=3, max_actions=30)
    assert reason is not None and "'go to desk 1'" in reason and "4 times" in reason
    # the same action with a different observation is not a repeat; thoughts do not count
    varied = turns(
        *[same] * 3,
        ("go to desk 1", "On the desk 1, you see a pen 1."),
        *[("think: hmm", "OK.")] * 5,
    )
    assert heuristic_trip(varied, repeats=3, max_actions=30) is None


def test_heuristic_trips_after_more_than_max_actions() -> None:
    moves = [(f"go to cabinet {i}", f"The cabinet {i} is closed.") for i in range(1, 32)]
    assert heuristic_trip(turns(*moves[:30]), repeats=3, max_actions=30) is None
    reason = heuristic_trip(turns(*moves[:31]), repeats=3, max_actions=30)
    assert reason is not None and "31 actions" in reason
    with_thoughts = turns(*moves[:30], *[("think: where next?", "OK.")] * 10)
    assert heuristic_trip(with_thoughts, repeats=3, max_actions=30) is None


def test_failure_classes() -> None:
    hallucinated = turns(
        ("go to microwave 1", "The microwave 1 is closed."),
        ("heat egg 1 with microwave 1", "Nothing happens."),
    )
    assert hallucinated_actions(hallucinated) == ["heat egg 1 with microwave 1"]
    assert classify_failure(hallucinated, None, repeats=3, max_actions=30) == "hallucination"
    held = turns(
        ("take egg 1 from countertop 1", "You pick up the egg 1 from the countertop 1."),
        ("heat egg 1 with microwave 1", "You heat the egg 1 using the microwave 1."),
        ("move egg 1 to diningtable 1", "You move the egg 1 to the diningtable 1."),
        ("move egg 1 to diningtable 1", "Nothing happens."),  # no longer held
    )
    assert hallucinated_actions(held) == ["move egg 1 to diningtable 1"]
    loop = turns(*[("go to desk 1", "On the desk 1, you see nothing.")] * 4)
    assert classify_failure(loop, "heuristic", repeats=3, max_actions=30) == (
        "inefficient_planning"
    )
    wander = turns(*[(f"go to shelf {i}", "On it, you see nothing.") for i in range(5)])
    assert classify_failure(
        wander, "the step limit (5) was reached", repeats=3, max_actions=30
    ) == ("step_limit")
    assert classify_failure(wander, None, repeats=3, max_actions=30) == "other"


# ---- the graph ------------------------------------------------------------------------------


def test_a_won_game_ends_after_one_trial(games: str) -> None:
    actor = ScriptedChatModel(replies=WIN)
    graph, sessions = build(actor)
    out = run(graph, AlfworldContext(games=games))
    assert out["solved"] and out["trial"] == 1
    assert out["episodes"] == [
        {
            "trial": 1,
            "won": True,
            "turns": 5,
            "commands": 4,
            "stop_reason": None,
            "failure": None,
        }
    ]
    assert out["evaluations"][0]["success"]
    first = actor.prompt_text(0)
    assert ScriptedGame.TASK in first and "Looking quickly around you" in first
    assert all(kw["stop"] == ["\n"] for kw in actor.kwargs_seen)
    # the task type picks the examples: a "put" game shows the put examples only
    assert few_shot("alfworld/examples_put")[0].splitlines()[0] in first
    assert few_shot("alfworld/examples_clean")[0].splitlines()[0] not in first
    # the thought is answered OK. and never sent to the environment
    assert sessions.replays == 0


def test_invalid_commands_get_nothing_happens_and_the_trial_goes_on(games: str) -> None:
    actor = ScriptedChatModel(replies=["fly to the moon", "", *WIN[1:]])
    graph, _ = build(actor)
    out = run(graph, AlfworldContext(games=games))
    assert out["solved"]
    prompt = actor.prompt_text(2)
    assert "fly to the moon\nNothing happens." in prompt
    assert "(empty reply)\nNothing happens." in prompt


def test_heuristic_stops_the_trial_at_its_threshold_and_reflects(games: str) -> None:
    actor = ScriptedChatModel(replies=["go to countertop 1"] * 4 + WIN)
    reflector = ScriptedChatModel(replies=["Reflection: I looped on the countertop; take the mug."])
    graph, _ = build(actor, reflector)
    ctx = AlfworldContext(
        games=games, max_trials=3, evaluator="heuristic", alfworld_memory="reflection"
    )
    out = run(graph, ctx)
    first = out["episodes"][0]
    assert first["turns"] == 4 and not first["won"]
    assert first["failure"] == "inefficient_planning"
    assert "heuristic" in first["stop_reason"] and "4 times" in first["stop_reason"]
    assert out["evaluations"][0]["feedback"].startswith(
        "The trial failed: stopped by the heuristic"
    )
    assert out["solved"] and out["trial"] == 2
    # the second trial starts fresh, with the reflection in its prompt
    second = actor.prompt_text(4)
    assert "I looped on the countertop" in second
    assert "go to countertop 1\nYou arrive at countertop 1" not in second.split("I looped")[1]
    assert "4 times" in reflector.prompt_text(0)


BUNDLED = "look_at_obj_in_light-AlarmClock-None-DeskLamp-308/trial_T20190908_222917_366542"


@pytest.mark.parametrize("passed", ["none", "base"])
def test_a_failed_trial_reflects_with_no_context_or_a_base_context(passed: str) -> None:
    """A caller may pass no context (LangGraph hands the nodes None) or a base ``Context``:
    the reflector then writes the default memory (sightings) from the family's defaults, on
    the bundled game set, instead of failing on a field the base class lacks."""
    actor = ScriptedChatModel(replies=["go to countertop 1"] * 12)
    reflector = ScriptedChatModel(replies=["Reflection: unused."])
    graph, _ = build(actor, reflector)
    config = {"configurable": {"thread_id": passed}, "recursion_limit": 200}
    ctx = None if passed == "none" else Context(max_trials=2)
    out = graph.invoke({"game": BUNDLED}, config, context=ctx)
    # no context: the graph's own defaults (AlfworldContext's 5 trials), for the routers as
    # for the nodes; a base context: its 2
    trials = AlfworldContext().max_trials if passed == "none" else 2
    assert [e["trial"] for e in out["episodes"]] == list(range(1, trials + 1))
    window = AlfworldContext().memory_size if ctx is None else ctx.memory_size
    assert not out["solved"] and len(out["reflections"]) == min(trials - 1, window)
    assert reflector.prompts == []  # sightings memory: written from the trial, no model call


@pytest.mark.parametrize("strategy", ["none", "reflexion"])
def test_turn_seeds_are_named_by_the_game_trial_and_turn(games: str, strategy: str) -> None:
    def seeds(ctx: Context, thread: str) -> list[Any]:
        actor = SeededScriptedChatModel(replies=["go to countertop 1"])
        graph, _ = build(actor)
        run(graph, ctx, thread)
        return [kw.get("seed") for kw in actor.kwargs_seen]

    ctx = AlfworldContext(games=games, max_trials=2, evaluator="heuristic", strategy=strategy)
    drawn = seeds(ctx, "a")
    assert len(drawn) == 8 and len(set(drawn)) == 8  # two trials of four turns, all distinct
    # another thread, another strategy, the same draws: a rerun reproduces, and paired
    # strategies share their random numbers turn by turn
    assert seeds(replace(ctx, strategy="none"), "b") == drawn
    assert seeds(replace(ctx, seeds="process"), "c") == [None] * 8


def test_the_llm_evaluator_does_not_cut_trials_short(games: str) -> None:
    actor = ScriptedChatModel(replies=["go to countertop 1"] * 6)
    judge = ScriptedChatModel(replies=['{"reasoning": "The mug never moved.", "verdict": "no"}'])
    graph, _ = build(actor, judge=judge)
    out = run(graph, AlfworldContext(games=games, max_trials=1, evaluator="llm", alfworld_steps=6))
    episode = out["episodes"][0]
    assert episode["turns"] == 6 and episode["failure"] == "inefficient_planning"
    assert "step limit (6)" in episode["stop_reason"]
    feedback = out["evaluations"][0]["feedback"]
    assert "not complete: The mug never moved." in feedback
    judged = judge.prompt_text(0)
    assert ScriptedGame.TASK in judged and "> go to countertop 1" in judged


def test_the_llm_evaluator_can_misjudge_a_won_game(games: str) -> None:
    actor = ScriptedChatModel(replies=WIN * 2)
    judge = ScriptedChatModel(replies=['{"reasoning": "unclear", "verdict": "no"}'])
    graph, _ = build(actor, judge=judge)
    out = run(graph, AlfworldContext(games=games, max_trials=2, evaluator="llm"))
    # the engine's verdict is kept for scoring, but the loop follows the self-evaluation
    assert [e["won"] for e in out["episodes"]] == [True, True]
    assert out["trial"] == 2 and not out["solved"]


@pytest.mark.parametrize("kind", ["agreement", "exact_match"])
def test_an_evaluator_of_short_answers_is_refused_with_the_choices_that_fit(
    games: str, kind: str
) -> None:
    with pytest.raises(ReflexionError, match=f"^evaluator is '{kind}': use one of heuristic, llm$"):
        AlfworldContext(games=games, evaluator=kind)


def test_omega_three_keeps_the_last_three_reflections(games: str) -> None:
    actor = ScriptedChatModel(replies=["think: I wait."])
    lessons: list[str] = []

    def rule(messages: list[BaseMessage]) -> str:
        lessons.append(f"Lesson number {len(lessons) + 1}.")
        return "Reflection: " + lessons[-1]

    reflector = RuleChatModel(rule=rule)
    graph, _ = build(actor, reflector)
    ctx = AlfworldContext(
        games=games, max_trials=5, memory_size=3, alfworld_steps=2, alfworld_memory="reflection"
    )
    out = run(graph, ctx)
    assert out["trial"] == 5 and len(lessons) == 4
    assert out["reflections"] == ["Lesson number 2.", "Lesson number 3.", "Lesson number 4."]
    last_trial_prompt = actor.prompt_text(len(actor.prompts) - 1)
    assert "umber 1." not in last_trial_prompt
    assert all(f"umber {i}." in last_trial_prompt for i in (2, 3, 4))
    assert all(e["failure"] == "step_limit" for e in out["episodes"])


def test_a_resumed_thread_replays_its_commands_into_a_fresh_environment(games: str) -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "crash"}, "recursion_limit": 200}

    script = iter(["go to countertop 1", "take mug 1 from countertop 1"])

    def crashing(messages: list[BaseMessage]) -> str:
        reply = next(script, None)
        if reply is None:
            raise RuntimeError("the process died")
        return reply

    first_sessions = EnvSessions(ScriptedGame)
    graph = alfworld_builder(
        actor_model=RuleChatModel(rule=crashing), sessions=first_sessions
    ).compile(checkpointer=saver)
    with pytest.raises(RuntimeError):
        graph.invoke({"game": GAME}, config, context=AlfworldContext(games=games))
    assert graph.get_state(config).next == ("actor",), "the thread stopped mid-trial"

    fresh, envs = recording_sessions()
    resumed = alfworld_builder(
        actor_model=ScriptedChatModel(replies=["go to shelf 1", "move mug 1 to shelf 1"]),
        sessions=fresh,
    ).compile(checkpointer=saver)
    out = resumed.invoke(None, config, context=AlfworldContext(games=games))
    assert out["solved"] and out["trial"] == 1
    assert fresh.replays == 1 and len(envs) == 1
    assert envs[0].steps == [
        "go to countertop 1",
        "take mug 1 from countertop 1",
        "go to shelf 1",
        "move mug 1 to shelf 1",
    ]


def test_an_empty_or_unknown_game_is_a_clear_error(games: str) -> None:
    graph, _ = build(ScriptedChatModel(replies=WIN))
    config = {"configurable": {"thread_id": "x"}}
    with pytest.raises(ReflexionError, match="the game is empty"):
        graph.invoke({"game": " "}, config, context=AlfworldContext(games=games))
    with pytest.raises(ReflexionError):
        graph.invoke(
            {"game": "no-such-game"},
            {"configurable": {"thread_id": "y"}},
            context=AlfworldContext(games=games),
        )


def test_a_trial_is_announced_after_its_game_is_checked_and_before_it_starts(games: str) -> None:
    """``begin`` (the loop's): the game name checked (a bad one announces no trial), then
    ``trial_started``, then the game reset; each trial counted once."""

    class Announced(ScriptedGame):
        def reset(self, game: Any) -> str:
            get_stream_writer()({"reset": game.name})
            return super().reset(game)

    graph = alfworld_builder(
        actor_model=ScriptedChatModel(replies=WIN), sessions=EnvSessions(Announced)
    ).compile(checkpointer=InMemorySaver())
    ctx = AlfworldContext(games=games)
    stream = graph.stream(
        {"game": GAME},
        {"configurable": {"thread_id": "a"}},
        context=ctx,
        stream_mode=["custom"],
        subgraphs=True,  # the subgraph's events reach the caller with it
    )
    chunks = [chunk for _, _, chunk in stream]
    assert chunks[:2] == [{"reflexion": "trial_started", "trial": 1}, {"reset": GAME}]
    assert sum(chunk.get("reflexion") == "trial_started" for chunk in chunks) == 1
    chunks = []
    with pytest.raises(ReflexionError) as bad:
        for _, _, chunk in graph.stream(
            {"game": "no-such-game"},
            {"configurable": {"thread_id": "b"}},
            context=ctx,
            stream_mode=["custom"],
            subgraphs=True,
        ):
            chunks.append(chunk)
    assert str(bad.value.args[0]).startswith("no game named 'no-such-game'; ")
    assert chunks == []


def test_environments_are_reused_across_threads(games: str) -> None:
    sessions, made = recording_sessions()
    graph = alfworld_builder(
        actor_model=ScriptedChatModel(replies=WIN * 2), sessions=sessions
    ).compile(checkpointer=InMemorySaver())
    for thread in ("a", "b"):
        graph.invoke(
            {"game": GAME},
            {"configurable": {"thread_id": thread}},
            context=AlfworldContext(games=games),
        )
    assert len(made) == 1 and made[0].resets == 2


def test_paired_strategies_fork_one_first_trial_of_each_game(games: str, tmp_path: Path) -> None:
    """Trial 1 (four loops on the countertop, stopped by the heuristic) runs once; ``none``
    and ``reflexion`` both continue from it, and only the reflexion retry, which reads the
    lesson, wins."""
    first_calls: list[int] = []

    def rule(messages: list[BaseMessage]) -> str:
        task = max(i for i, m in enumerate(messages) if "put some mug on shelf" in m.text)
        done = sum(1 for m in messages[task + 1 :] if isinstance(m, AIMessage))
        if "lesson: take the mug" in messages[task].text:
            return WIN[done]
        first_calls.append(done)
        return "go to countertop 1"

    reflector = RuleChatModel(rule=lambda _m: "Reflection: lesson: take the mug.")
    graph = alfworld_builder(
        actor_model=RuleChatModel(rule=rule),
        reflector_model=reflector,
        sessions=EnvSessions(ScriptedGame),
    ).compile(checkpointer=InMemorySaver())
    finals = {}
    for strategy in ("none", "reflexion"):
        task = BenchTask(
            thread_id=f"{strategy}-g",
            input={"game": GAME},
            label="g",
            meta={"task_id": GAME},
            fork_from="first-g",
        )
        ctx = AlfworldContext(
            games=games, max_trials=2, strategy=strategy, alfworld_memory="reflection"
        )  # type: ignore[arg-type]
        with (tmp_path / f"{strategy}.jsonl").open("a", encoding="utf-8") as handle:
            done, errors = run_benchmark(graph, [task], ctx, Sink(handle), settings={})
        assert errors == []
        finals[strategy] = done[0]
    assert len(first_calls) == 4 + 4  # trial 1 once, then none's trial 2
    none, reflexion = finals["none"], finals["reflexion"]
    assert none["evaluations"][0] == reflexion["evaluations"][0]
    assert not none["solved"] and reflexion["solved"]
    episodes = {
        s: graph.get_state({"configurable": {"thread_id": f"{s}-g"}}).values["episodes"]
        for s in finals
    }
    assert episodes["none"][0] == episodes["reflexion"][0]
    assert [e["won"] for e in episodes["reflexion"]] == [False, True]
    assert [e["won"] for e in episodes["none"]] == [False, False]
