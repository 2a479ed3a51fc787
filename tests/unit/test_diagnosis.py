"""What a trial's own turns show (why the game refused a command, where the goal's objects
were) and what reads it: the actor's explained refusals, the memory entries written without a
model, the reflector's prompt (the paper's feedback only), and the results keys they move."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.diagnosis import (
    _room,
    _walk,
    explained,
    found_leads,
    task_words,
    turns_of,
)
from reflexion.alfworld.turns import NOTHING, Turn
from reflexion.harness.bench.naming import tokens
from reflexion.harness.bench.settings import first_trial_key, result_settings
from reflexion.harness.fakes import ScriptedChatModel
from tests.unit.test_alfworld import WIN, build, run
from tests.unit.test_alfworld import games as games  # a fixture

ROOM = (
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
    "countertop 1, a fridge 1, a microwave 1, and a sinkbasin 1.\n\n"
    "Your task is to: heat some apple and put it in fridge."
)
COUNTER = "You arrive at countertop 1. On the countertop 1, you see a apple 2, and a knife 1."


def turns(*pairs: tuple[str, str]) -> list[Turn]:
    return [Turn(action=a, observation=o) for a, o in pairs]


def refused_commands(trial: list[Turn], task: str = "") -> list[str]:
    """Each distinct refused command with the reason the turns before it give (unexplained
    ones included, which the actor reads as the game wrote them), in order: what
    :func:`explained` draws on."""
    lines: list[str] = []
    for turn, reason in _walk(trial, _room(task)):
        line = f"- {' '.join(turn['action'].split())}: {reason}."
        if reason is not None and line not in lines:
            lines.append(line)
    return lines


def test_each_refusal_gets_the_reason_the_turns_show():
    found = refused_commands(
        turns(
            ("heat apple 2 with microwave 1", NOTHING),
            ("think: The apple is on the countertop.", "OK."),
            ("go to countertop 1", COUNTER),
            ("take apple from countertop 1", NOTHING),
            ("take apple 2 from countertop 1", "You pick up the apple 2 from the countertop 1."),
            ("take knife 1 from countertop 1", NOTHING),
            ("heat apple 2 with microwave 1", NOTHING),
        ),
        ROOM,
    )
    assert found == [
        "- heat apple 2 with microwave 1: you were not holding apple 2 (take it first).",
        "- take apple from countertop 1: there was no apple at countertop 1 (you saw: apple 2, "
        "knife 1).",
        "- take knife 1 from countertop 1: your hands were full: you were holding apple 2 "
        "(put it down first).",
        "- heat apple 2 with microwave 1: you were at countertop 1, not at microwave 1.",
    ]


def test_places_closed_receptacles_and_unknown_commands():
    found = refused_commands(
        turns(
            ("open fridge 1", NOTHING),
            ("go to countertop 1", COUNTER),
            ("go to countertop 1", NOTHING),
            ("go to garage 1", NOTHING),
            ("take apple 2 from countertop 1", "You pick up the apple 2 from the countertop 1."),
            ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
            ("move apple 2 to fridge 1", NOTHING),
            ("try another command", NOTHING),
        ),
        ROOM,
    )
    assert found == [
        "- open fridge 1: you had not gone to fridge 1.",
        "- go to countertop 1: you were already there.",
        "- go to garage 1: the room has no garage 1.",
        "- move apple 2 to fridge 1: fridge 1 was closed (open it first).",
        "- try another command: the game has no such command (its commands: go to, take, "
        "move, open, close, clean, heat, cool, use, examine, inventory, look).",
    ]
    assert refused_commands(
        turns(
            ("go to cabinet 1", "You arrive at cabinet 1. On the cabinet 1, you see a desklamp 1."),
            (
                "go to sinkbasin 1",
                "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing.",
            ),
            ("use desklamp 1", NOTHING),
        )
    ) == ["- use desklamp 1: desklamp 1 is at cabinet 1, and you were at sinkbasin 1."]


def test_an_opened_receptacle_and_a_put_down_object_are_tracked():
    found = refused_commands(
        turns(
            ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
            (
                "open fridge 1",
                "You open the fridge 1. The fridge 1 is open. In it, you see nothing.",
            ),
            ("open fridge 1", NOTHING),
            ("go to countertop 1", COUNTER),
            ("take apple 2 from countertop 1", "You pick up the apple 2 from the countertop 1."),
            ("move apple 2 to countertop 1", "You move the apple 2 to the countertop 1."),
            ("move apple 2 to countertop 1", NOTHING),
            ("take knife 1 from countertop 1", "You pick up the knife 1 from the countertop 1."),
        ),
        ROOM,
    )
    assert found == [
        "- open fridge 1: fridge 1 does not open, or was already open.",
        "- move apple 2 to countertop 1: you were not holding apple 2 (take it first).",
    ]


def test_forms_tools_and_what_is_already_in_hand():
    found = refused_commands(
        turns(
            ("(empty reply)", NOTHING),
            ("go to countertop 1", COUNTER),
            ("take apple 2", NOTHING),
            ("take apple 2 from countertop 1", "You pick up the apple 2 from the countertop 1."),
            ("take apple 2 from countertop 1", NOTHING),
            ("put apple 2 in countertop 1", NOTHING),
            ("heat  apple 2\nwith fridge 1", NOTHING),
        ),
        ROOM,
    )
    assert found == [
        "- (empty reply): the reply held no command.",
        "- take apple 2: take is written take X from Y.",
        "- take apple 2 from countertop 1: you were already holding apple 2.",
        "- put apple 2 in countertop 1: an object is put down with move apple 2 to countertop 1.",
        "- heat apple 2 with fridge 1: heat is done with a microwave.",
    ]


def test_an_opened_receptacle_keeps_its_own_contents():
    found = refused_commands(
        turns(
            ("go to cabinet 1", "You arrive at cabinet 1. The cabinet 1 is closed."),
            (
                "open cabinet 2",
                "You open the cabinet 2. The cabinet 2 is open. In it, you see a cup 1.",
            ),
            ("take plate 1 from cabinet 2", NOTHING),
            ("use desklamp 1", NOTHING),
        ),
    )
    assert found[0] == "- take plate 1 from cabinet 2: you were at cabinet 1, not at cabinet 2."
    assert found[1] == "- use desklamp 1: nothing in the turns shows why."


def test_where_the_goals_objects_were_seen():
    found = turns(
        ("go to countertop 1", COUNTER),
        ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
        ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 1."),
    )
    assert found_leads(found, ROOM) == (
        "apple 2 was at countertop 1: go to countertop 1. apple 1 was at fridge 1: go to fridge 1."
    )
    assert task_words(ROOM) == {"heat", "some", "apple", "and", "put", "it", "in", "fridge"}


def test_the_actor_reads_why_each_refusal_happened_at_the_time():
    """Each refusal is explained by the turns before it, not by what came later; a refusal the
    turns do not explain, thoughts and carried-out commands read as the game wrote them."""
    trial = turns(
        ("go to countertop 1", COUNTER),
        ("go to countertop 1", NOTHING),
        ("think: I take the apple.", "OK."),
        ("heat apple 2 with microwave 1", NOTHING),
        ("take apple 2 from countertop 1", "You pick up the apple 2 from the countertop 1."),
        ("open fridge 1", NOTHING),
        ("examine apple 2", NOTHING),
    )
    assert explained(trial, ROOM) == [
        COUNTER,
        f"{NOTHING} Likely because you were already there.",
        "OK.",
        f"{NOTHING} Likely because you were not holding apple 2 (take it first).",
        "You pick up the apple 2 from the countertop 1.",
        f"{NOTHING} Likely because you were at countertop 1, not at fridge 1.",
        NOTHING,  # the turns do not show why
    ]
    assert explained([], ROOM) == []


def test_the_actor_reads_the_explanations_only_when_asked(games: str) -> None:
    """``alfworld_explain``: the refusal the actor reads next says why; the heuristic still
    sees the same command and reply four times, and stops the trial as before."""
    script = ["take mug 1 from countertop 1"] * 4 + WIN
    for explain in (False, True):
        actor = ScriptedChatModel(replies=script)
        graph, _ = build(actor, ScriptedChatModel(replies=["Reflection: go there first."]))
        out = run(graph, AlfworldContext(games=games, max_trials=2, alfworld_explain=explain))
        assert out["solved"] and out["trial"] == 2  # the heuristic stopped trial 1 as before
        read = actor.prompts[1][-1].text
        assert read == (
            f"{NOTHING} Likely because you had not gone to countertop 1." if explain else NOTHING
        )


def test_turns_are_read_back_from_trajectory_lines():
    lines = ["> go to countertop 1", COUNTER, "> look", NOTHING, "> inventory"]
    assert turns_of(lines) == [
        Turn(action="go to countertop 1", observation=COUNTER),
        Turn(action="look", observation=NOTHING),
        Turn(action="inventory", observation=""),
    ]


def test_the_reflector_reads_the_papers_feedback_only(games: str) -> None:
    actor = ScriptedChatModel(replies=["take mug 1 from countertop 1"] * 4 + WIN)
    reflector = ScriptedChatModel(replies=["Reflection: go to countertop 1 first."])
    graph, _ = build(actor, reflector)
    ctx = AlfworldContext(games=games, max_trials=2, alfworld_memory="reflection")
    out = run(graph, ctx)
    assert out["solved"] and out["trial"] == 2
    prompt = reflector.prompt_text(0)
    assert "4 times" in prompt  # the heuristic's own feedback
    assert "Commands the game refused" not in prompt
    assert "refused" not in out["evaluations"][0]["feedback"]


def test_sightings_name_only_the_goal_objects_seen_and_are_empty_otherwise():
    trial = turns(("go to countertop 1", COUNTER), ("heat apple 2 with microwave 1", NOTHING))
    assert found_leads(trial, ROOM) == "apple 2 was at countertop 1: go to countertop 1."
    closed = "You arrive at cabinet 1. The cabinet 1 is closed."
    assert found_leads(turns(("go to cabinet 1", closed)), ROOM) == ""
    assert found_leads([], ROOM) == ""


def test_a_trial_that_saw_no_goal_object_leaves_the_sightings_memory_empty(games: str) -> None:
    """Sightings: nothing seen adds no entry, so trial 2 reads trial 1's prompt; a trial that
    saw the mug adds where it was."""
    blind = ["go to cabinet 1"] * 4 + WIN
    actor = ScriptedChatModel(replies=blind)
    reflector = ScriptedChatModel(replies=[])  # any call would fail: no replies scripted
    graph, _ = build(actor, reflector)
    out = run(graph, AlfworldContext(games=games, max_trials=2, alfworld_memory="sightings"))
    assert out["solved"] and not out.get("reflections")
    assert [m.text for m in actor.prompts[4]] == [m.text for m in actor.prompts[0]]
    seeing = ["go to countertop 1"] * 4 + WIN
    actor = ScriptedChatModel(replies=seeing)
    graph, _ = build(actor, reflector)
    out = run(graph, AlfworldContext(games=games, max_trials=2, alfworld_memory="sightings"))
    assert out["reflections"] == ["mug 1 was at countertop 1: go to countertop 1."]
    assert out["reflections"][0] in actor.prompt_text(4)


def test_results_keys_change_only_where_the_memory_entry_can_act():
    """A run's name shows the ALFWorld options only where they act: the reflector's options
    not where no reflector runs, the paper's values not at all."""

    def named(ctx: AlfworldContext) -> list[str]:
        return tokens(result_settings(ctx))

    reflexion = AlfworldContext(strategy="reflexion", alfworld_memory="reflection")
    assert "alfworld_diagnosis" not in result_settings(reflexion)  # no longer a field
    paper = AlfworldContext.paper(strategy="reflexion", alfworld_explain=True)
    none = AlfworldContext(strategy="none")
    sightings = replace(reflexion, alfworld_memory="sightings")
    assert result_settings(sightings)["alfworld_memory"] == "sightings"
    assert not any(t.startswith("alfworld_memory=") for t in named(reflexion))
    assert result_settings(replace(none, alfworld_memory="sightings")) == result_settings(none)
    assert first_trial_key(result_settings(sightings)) == first_trial_key(result_settings(paper))
    assert result_settings(reflexion)["alfworld_explain"] is True  # the default since it came
    unexplained = replace(reflexion, alfworld_explain=False)
    assert not any(t.startswith("alfworld_explain") for t in named(unexplained))
    # the actor reads it from trial 1 on, so it is a different first trial
    assert first_trial_key(result_settings(unexplained)) != first_trial_key(
        result_settings(reflexion)
    )


@pytest.mark.parametrize("entry", ["sightings"])
def test_reflector_options_do_not_rename_a_run_whose_memory_the_code_writes(entry: str) -> None:
    """No reflector runs under a code-written memory entry: its model and the diagnosis cannot
    act, so setting them must not start the same games over."""
    run = AlfworldContext(strategy="reflexion", alfworld_memory=entry)
    inert = replace(run, reflector_model="local:qwen2.5-coder-1.5b")
    assert result_settings(inert) == result_settings(run)
    reflected = replace(run, alfworld_memory="reflection")  # where it acts
    for option in ("reflector_model",):
        changed = replace(reflected, **{option: getattr(inert, option)})
        assert result_settings(changed) != result_settings(reflected), option
