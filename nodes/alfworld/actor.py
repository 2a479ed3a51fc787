"""The ALFWorld actor: a ReAct player of a household game, one trial as a subgraph.

One trial is ``begin → turn → turn → … → END``, used as the Reflexion graph's ``actor`` node.
``begin`` is the loop's trial bookkeeping (:func:`~reflexion.graphs.loop.trial_start`) around
the game's check and reset; each ``turn`` asks the model for one line (a ``think:`` step,
answered ``OK.``, or a command sent to the environment) and records the observation, so every
turn is checkpointed and a resumed thread replays its commands into a fresh environment
(:class:`~reflexion.alfworld.sessions.EnvSessions`). A trial ends when the environment closes
the episode, at the step limit, when the prompt outgrows the context budget, or (with the
heuristic evaluator) as soon as the heuristic holds. A command the game refused earlier in the
trial is drawn again hotter (``Context.repeat_guard``; off by default here: not measured).

The engine's ``won`` flag is recorded per trial for scoring only (``episodes``); neither the
agent nor the evaluators read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.diagnosis import explained
from reflexion.alfworld.env import Environment, TextWorldEnv
from reflexion.alfworld.games import LIST_HINT, Game, resolve_game
from reflexion.alfworld.sessions import EnvSessions
from reflexion.alfworld.state import Episode, graph_family
from reflexion.alfworld.turns import (
    EMPTY_REPLY,
    NOTHING,
    THINK_REPLY,
    ParsedTurn,
    Turn,
    classify_failure,
    heuristic_trip,
    parse_turn,
)
from reflexion.core.context import get_context
from reflexion.core.errors import ReflexionError
from reflexion.core.state import TrialInput
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.core.tracing import Family
from reflexion.nodes.common import (
    TrialStart,
    actor_llm,
    named_seed,
    prompt_tokens,
)
from reflexion.nodes.memory import memory_block
from reflexion.prompts import few_shot, render, template

STOP = ["\n"]
"""One line per turn: a thought or a command."""

EnvFactory = Callable[[], Environment]


def thread_key(config: RunnableConfig | None) -> str:
    """The thread a node runs in: its environment session's key."""
    configurable = (config or {}).get("configurable") or {}
    return str(configurable.get("thread_id") or "default")


def example_turns(example: str) -> list[BaseMessage]:
    """A written trajectory (initial observation, then ``> action`` / observation lines) as
    chat turns."""
    lines = [line for line in example.strip().splitlines() if line.strip()]
    first = next((i for i, line in enumerate(lines) if line.startswith("> ")), len(lines))
    turns: list[BaseMessage] = [
        HumanMessage(render("alfworld/task", observation="\n".join(lines[:first])))
    ]
    for line in lines[first:]:
        if line.startswith("> "):
            turns.append(AIMessage(line[2:].strip()))
        else:
            turns.append(HumanMessage(line.strip()))
    return turns


def alfworld_messages(
    state: Any, ctx: AlfworldContext, kind: str, turns: list[Turn]
) -> list[BaseMessage]:
    """Instructions, the two examples of this task type, the task and memory, then this
    trial's turns. Everything before the memory is the same in every trial of a task type (a
    cacheable prefix); the memory follows the task, as in the paper, on a trial that reads it
    (``Context.retry``: a blind retry does not). ``AlfworldContext.alfworld_explain`` adds to
    each refused command's observation why it was likely refused."""
    system = SystemMessage(render("alfworld/system", max_steps=str(ctx.alfworld_steps)))
    user = render("alfworld/task", observation=state.task.strip())
    # trial is this trial's number here (begin counted it)
    informed = state.trial <= 1 or ctx.informs(state.trial - 1)
    if informed and (memory := memory_block(state, ctx)):
        user = f"{user}\n\n{memory}"
    messages: list[BaseMessage] = [system]
    for example in few_shot(f"alfworld/examples_{kind}"):
        messages += example_turns(example)
    messages.append(HumanMessage(user))
    observed = [t["observation"] for t in turns]
    if ctx.alfworld_explain:
        observed = explained(turns, state.task)
    for turn, observation in zip(turns, observed, strict=True):
        messages += [AIMessage(turn["action"]), HumanMessage(observation)]
    return messages


def refused_before(parsed: ParsedTurn, turns: list[Turn]) -> bool:
    """Whether ``parsed`` is a command the game refused earlier in this trial (answered
    "Nothing happens."): what ALFWorld's repeat guard draws again (``Context.repeat_guard``)."""
    if parsed.is_think or not parsed.action:
        return False
    return any(t["action"] == parsed.action and t["observation"] == NOTHING for t in turns)


@dataclass(kw_only=True)
class PlayInput(TrialInput):
    """What the ALFWorld actor reads from the Reflexion state: a trial's input and the game."""

    game: str = ""


@dataclass(kw_only=True)
class PlayOutput:
    """What one trial hands back to the Reflexion state."""

    task: str = ""
    kind: str = ""
    trial: int = 0
    trajectory: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    answer: str | None = None
    stop_reason: str | None = None
    episodes: list[Episode] = field(default_factory=list)
    """The finished trial's record (one item; the Reflexion state appends it)."""


@dataclass(kw_only=True)
class PlayState(PlayOutput, PlayInput):
    """The state of one ALFWorld trial: its input, what it hands back (``trajectory`` holds the
    turns as lines, ``> action`` then the observation; ``commands`` the commands sent to the
    environment, not thoughts or empty replies), the turns and whether it is over."""

    turns: list[Turn] = field(default_factory=list)
    done: bool = False


def make_alfworld_actor(
    model: BaseChatModel | None = None,
    env_factory: EnvFactory | None = None,
    sessions: EnvSessions | None = None,
    *,
    trial_start: TrialStart,
    family: Family = graph_family,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The ALFWorld actor subgraph; ``model`` overrides ``Context.actor_model``;
    ``env_factory`` makes environments (default: the real TextWorld engine); ``sessions``
    shares live environments with the caller (tests inspect replays through it);
    ``trial_start`` is the loop's :func:`~reflexion.graphs.loop.trial_start`, which makes
    ``begin``: the trial's bookkeeping around the game's check and reset; ``family`` (of the
    state, once ``kind`` is known) labels its model calls."""
    live = sessions if sessions is not None else EnvSessions(env_factory or TextWorldEnv)

    def game_of(state: PlayInput, ctx: AlfworldContext) -> Game:
        if not state.game.strip():
            raise ReflexionError(
                "the game is empty: give a game name or a path to a game.tw-pddl file "
                f"({LIST_HINT})"
            )
        return resolve_game(state.game.strip(), ctx.games)

    def finish(
        state: PlayState,
        ctx: AlfworldContext,
        turns: list[Turn],
        stop_reason: str | None,
        won: bool,
    ) -> dict[str, Any]:
        failure = None if won else classify_failure(turns, stop_reason)
        episode = Episode(
            trial=state.trial,
            won=won,
            turns=len(turns),
            commands=sum(1 for t in turns if not t["action"].startswith("think:")),
            stop_reason=stop_reason,
            failure=failure,
        )
        return {"done": True, "stop_reason": stop_reason, "episodes": [episode]}

    def checked_game(state: PlayState, runtime: Runtime[AlfworldContext]) -> Steps[Game]:
        """The game of ``state``, checked before the trial is announced."""
        return (yield from block(game_of, state, get_context(runtime, AlfworldContext)))

    def fresh(
        state: PlayState, runtime: Runtime[AlfworldContext], game: Game
    ) -> Steps[dict[str, Any]]:
        """A trial starts from the game reset: its first observation is the task, with no
        turns yet."""
        observation = yield from block(live.start, thread_key(get_config()), game)
        return {
            "task": observation,
            "kind": game.kind,
            "turns": [],
            "trajectory": [],
            "commands": [],
            "answer": None,
            "stop_reason": None,
            "episodes": [],
            "done": False,
        }

    def turn(state: PlayState, runtime: Runtime[AlfworldContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, AlfworldContext)
        game = yield from block(game_of, state, ctx)
        key = thread_key(get_config())
        llm = yield from block(actor_llm, model, ctx)
        messages = alfworld_messages(state, ctx, game.kind, state.turns)
        used = prompt_tokens(llm, messages)
        if used + ctx.max_tokens > ctx.context_budget:
            yield from block(live.release, key)
            reason = render(
                "alfworld/over_budget", tokens=str(used), budget=str(ctx.context_budget)
            )
            return finish(state, ctx, state.turns, reason, won=False)
        seed = (
            named_seed(llm, game.name, state.trial, len(state.turns))
            if ctx.seeds == "retry"
            else {}
        )
        parsed = parse_turn((yield from ask(llm, messages, stop=STOP, **seed)).text)
        if ctx.repeat_guard and refused_before(parsed, state.turns):
            # a command the game already refused this trial: the same prompt, drawn hotter
            hot = yield from block(actor_llm, model, ctx, hot=True)
            for draw in range(1, ctx.repeat_guard + 1):
                again_seed = (
                    named_seed(hot, game.name, state.trial, len(state.turns), draw)
                    if ctx.seeds == "retry"
                    else {}
                )
                again = parse_turn((yield from ask(hot, messages, stop=STOP, **again_seed)).text)
                if again.action and not refused_before(again, state.turns):
                    parsed = again
                    break
        commands = list(state.commands)
        if parsed.is_think:
            action, observation = parsed.action, THINK_REPLY
        elif not parsed.action:
            action, observation = EMPTY_REPLY, NOTHING
        else:
            action = parsed.action
            observation = yield from block(live.step, key, game, commands, action)
            commands.append(action)
        turns = [*state.turns, Turn(action=action, observation=observation)]
        update: dict[str, Any] = {
            "turns": turns,
            "commands": commands,
            "trajectory": [*state.trajectory, f"> {action}", observation],
        }
        ended, won = yield from block(live.done, key, game, commands)
        stop_reason: str | None = None
        if ended:
            pass
        elif ctx.evaluator != "llm":  # the heuristic (ALFWorld's default evaluator)
            trip = heuristic_trip(turns)
            stop_reason = template("alfworld/heuristic_stop").format(trip=trip) if trip else None
        if not ended and stop_reason is None and len(turns) >= ctx.alfworld_steps:
            stop_reason = render("alfworld/step_limit", max_steps=str(ctx.alfworld_steps))
        if ended or stop_reason is not None:
            yield from block(live.release, key)
            update |= finish(state, ctx, turns, stop_reason, won=won)
        return update

    def after(state: PlayState) -> Literal["turn", "__end__"]:
        return "__end__" if state.done else "turn"

    builder = StateGraph(
        PlayState, context_schema=AlfworldContext, input_schema=PlayInput, output_schema=PlayOutput
    )
    begin = trial_start(fresh, family=family, empty_task=None, check=checked_game)
    builder.add_node("begin", begin)
    builder.add_node("turn", Node(turn, role="actor", family=family))
    builder.add_edge(START, "begin")
    builder.add_conditional_edges("begin", after)
    builder.add_conditional_edges("turn", after)
    return builder.compile(name="alfworld-actor")
