"""The ReAct actor: Thought / Action / Observation steps with Wikipedia, as a subgraph.

One trial is a small loop — ``begin → think → act → think → … → END`` — compiled as its own
graph and used as the Reflexion graph's ``actor`` node, so Studio shows the steps and a
checkpointed thread resumes mid-trial. ``begin`` is the loop's trial bookkeeping
(:func:`~reflexion.graphs.loop.trial_start`) around a fresh trial with no steps; ``think`` asks
the model for one step; ``act`` runs the action (``Search``/``Lookup`` on a
:class:`~reflexion.qa.wiki.WikiBackend`, or ``Finish``) and adds the observation. A trial
halts, as in the paper, at the step limit or when the prompt outgrows the context budget; a
halted trial has no answer and a ``stop_reason`` the evaluator reports. An unparseable reply
becomes an observation that says so, and the loop goes on. A step that repeats a search of
this trial, or finishes with an answer already judged incorrect, is drawn again hotter (the
repeat guard, ``Context.repeat_guard``) before it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from reflexion.core.answers import normalize_answer
from reflexion.core.context import get_context
from reflexion.core.state import TrialInput
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.core.tracing import Family
from reflexion.models.providers import EmbeddedChatModel
from reflexion.nodes.common import TrialStart, actor_llm, prompt_tokens
from reflexion.nodes.memory import memory_block
from reflexion.nodes.qa.retry_memory import rejected_keys, with_memory
from reflexion.prompts import few_shot, render, template
from reflexion.qa.backends import get_backend
from reflexion.qa.context import REACT_FAMILY, ReActContext
from reflexion.qa.parsing import ReactStepParse, parse_react_step
from reflexion.qa.wiki import (
    LookupCursor,
    WikiBackend,
    WikiTools,
    normalize_title,
)

STOP = ["\nObservation", "\nQuestion:", "\n---"]

REACT_GRAMMAR = r"""
root ::= "Thought: " thought "\nAction: " action
thought ::= [^\n]{1,300}
action ::= ("Search[" arg "]") | ("Lookup[" arg "]") | ("Finish[" arg "]")
arg ::= [^\]\n]{1,100}
"""
"""Holds an embedded model to one ``Thought`` line and one well-formed action per step. The
thought is capped at 300 characters: a small model that rambles (often restating its
reflections) would otherwise spend ``max_tokens`` before reaching the action."""

FIRST_STEP_GRAMMAR = REACT_GRAMMAR.replace(
    'action ::= ("Search[" arg "]") | ("Lookup[" arg "]") | ("Finish[" arg "]")',
    'action ::= "Search[" arg "]"',
)
"""The first step of a trial must search: small models otherwise answer at once from memory
(what the CoT agent does), which defeats the point of a retrieval agent."""

REPEATED_SEARCH = template("qa/react_repeated_search")
"""The observation for a search repeated within a trial (small models otherwise loop on the
same Search until the step limit); the page stays open for Lookup."""

REPEATED_MISS = template("qa/react_repeated_miss")
"""The observation for a search that found nothing and is tried again within a trial (the
loop a 1.5B model fell into on a title the corpus lacks), with the similar titles again."""

INVALID_ACTION = template("qa/react_invalid_action")


class Step(TypedDict):
    """One finished ReAct step."""

    thought: str
    action: str
    """The action as written, e.g. ``Search[Ed Wood]`` (or the raw reply when unparseable)."""
    observation: str


@dataclass(kw_only=True)
class ReactInput(TrialInput):
    """What the ReAct subgraph reads from the Reflexion state."""


@dataclass(kw_only=True)
class ReactOutput:
    """What one ReAct trial hands back to the Reflexion state."""

    trial: int = 0
    trajectory: list[str] = field(default_factory=list)
    answer: str | None = None
    stop_reason: str | None = None


@dataclass(kw_only=True)
class ReactState(ReactInput):
    """The state of one ReAct trial."""

    trajectory: list[str] = field(default_factory=list)
    """The steps so far as lines (``Thought:``, ``Action:``, ``Observation:``)."""
    steps: list[Step] = field(default_factory=list)
    """The steps so far, structured (the prompt is rebuilt from them)."""
    pending: dict[str, Any] | None = None
    """The step ``think`` produced and ``act`` has not run yet."""
    cursor: dict[str, Any] = field(default_factory=dict)
    """Last page searched and lookup progress (:class:`~reflexion.qa.wiki.LookupCursor`)."""
    answer: str | None = None
    stop_reason: str | None = None
    done: bool = False


def _example_turns(example: str) -> list[BaseMessage]:
    """A written ReAct trajectory as chat turns: question, then step / observation pairs."""
    turns: list[BaseMessage] = []
    step: list[str] = []
    for line in example.strip().splitlines():
        if line.startswith("Question:"):
            turns.append(HumanMessage(line))
        elif line.startswith("Observation:"):
            turns += [AIMessage("\n".join(step)), HumanMessage(line)]
            step = []
        else:
            step.append(line)
    if step:
        turns.append(AIMessage("\n".join(step)))
    return turns


def react_messages(state: ReactState, ctx: ReActContext) -> list[BaseMessage]:
    """Instructions, the few-shot trajectories, the question with its memory
    (:func:`~reflexion.nodes.qa.retry_memory.with_memory`), then this trial's steps."""
    messages: list[BaseMessage] = [
        SystemMessage(render("qa/react_system", max_steps=str(ctx.max_steps)))
    ]
    for example in few_shot("qa/react_examples"):
        messages += _example_turns(example)
    user = render("qa/react_task", task=state.task.strip())
    # trial is this trial's number here (begin counted it): a blind retry reads no memory
    informed = state.trial <= 1 or ctx.informs(state.trial - 1)
    memory = memory_block(state, ctx) if informed else ""
    messages.append(HumanMessage(with_memory(user, memory)))
    for step in state.steps:
        messages += [
            AIMessage(f"Thought: {step['thought']}\nAction: {step['action']}"),
            HumanMessage(f"Observation: {step['observation']}"),
        ]
    return messages


def _lines(step: Step) -> list[str]:
    return [
        f"Thought: {step['thought']}",
        f"Action: {step['action']}",
        f"Observation: {step['observation']}",
    ]


def _searched_before(steps: list[Step], entity: str) -> bool | None:
    """Whether this trial already searched ``entity`` (case, accents and punctuation aside):
    True when it found its page, False when it found nothing, ``None`` when it did not."""
    wanted = normalize_title(entity)
    for step in steps:
        action = step["action"]
        if action.startswith("Search[") and normalize_title(action[7:-1]) == wanted:
            observation = step["observation"]
            if not observation.startswith("Search needs"):
                return not observation.startswith(("Could not find", "You already searched ["))
    return None


def _redraws(
    parsed: ReactStepParse, state: ReactState, ctx: ReActContext, rejected: set[str]
) -> int:
    """How many times to draw a step again (the repeat guard, ``Context.repeat_guard``): when it
    searches what this trial already searched, or finishes with an answer already judged
    incorrect (``rejected``); otherwise 0 (the step stands)."""
    if parsed.action == "search" and _searched_before(state.steps, parsed.argument) is not None:
        return ctx.repeat_guard
    if parsed.action == "finish" and normalize_answer(parsed.argument) in rejected:
        return ctx.repeat_guard
    return 0


def make_react_actor(
    model: BaseChatModel | None = None,
    backend: WikiBackend | None = None,
    *,
    trial_start: TrialStart,
    family: Family = REACT_FAMILY,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The ReAct actor subgraph; ``model`` overrides ``Context.actor_model`` and ``backend``
    overrides the Wikipedia chosen by ``ReActContext.wiki`` / ``ReActContext.corpus``;
    ``trial_start`` is the loop's :func:`~reflexion.graphs.loop.trial_start`, which makes
    ``begin``: the trial's bookkeeping around the reset of the steps; ``family`` labels its
    model calls."""

    def tools(ctx: ReActContext) -> WikiTools:
        return WikiTools(backend if backend is not None else get_backend(ctx.wiki, ctx.corpus))

    def fresh(
        state: ReactState, runtime: Runtime[ReActContext], checked: None
    ) -> Steps[dict[str, Any]]:
        """A trial starts with no steps, after the backend is reached: a missing corpus fails
        here, before any model call."""
        yield from block(tools, get_context(runtime, ReActContext))
        return {
            "trajectory": [],
            "steps": [],
            "pending": None,
            "cursor": {},
            "answer": None,
            "stop_reason": None,
            "done": False,
        }

    def think(state: ReactState, runtime: Runtime[ReActContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, ReActContext)
        llm = yield from block(actor_llm, model, ctx)
        messages = react_messages(state, ctx)
        used = prompt_tokens(llm, messages)
        if used + ctx.max_tokens > ctx.context_budget:
            return {
                "done": True,
                "pending": None,
                "stop_reason": render(
                    "qa/react_over_budget", tokens=str(used), budget=str(ctx.context_budget)
                ),
            }
        options: dict[str, Any] = {}
        if isinstance(llm, EmbeddedChatModel):
            options["gbnf"] = FIRST_STEP_GRAMMAR if not state.steps else REACT_GRAMMAR
        reply = (yield from ask(llm, messages, stop=STOP, **options)).text
        parsed = parse_react_step(reply)
        rejected = rejected_keys(state, ctx)
        if redraws := _redraws(parsed, state, ctx, rejected):
            # a repeated search or a rejected answer: the same prompt, drawn hotter
            hot = yield from block(actor_llm, model, ctx, hot=True)
            for _ in range(redraws):
                again = (yield from ask(hot, messages, stop=STOP, **options)).text
                again_parsed = parse_react_step(again)
                if again_parsed.action and not _redraws(again_parsed, state, ctx, rejected):
                    reply, parsed = again, again_parsed
                    break
        return {
            "pending": {
                "thought": parsed.thought,
                "action": parsed.action,
                "argument": parsed.argument,
                "error": parsed.error,
                "raw": reply.strip()[:300],
            }
        }

    def act(state: ReactState, runtime: Runtime[ReActContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, ReActContext)
        pending = state.pending or {}
        action, argument = pending.get("action"), str(pending.get("argument", ""))
        cursor = LookupCursor.from_dict(state.cursor)
        update: dict[str, Any] = {"pending": None}
        if action == "finish":
            lines = [f"Thought: {pending['thought']}", f"Action: Finish[{argument}]"]
            return {
                **update,
                "answer": argument,
                "done": True,
                "trajectory": state.trajectory + lines,
            }
        before = _searched_before(state.steps, argument) if action == "search" else None
        if action == "search" and before:
            observation = REPEATED_SEARCH.format(entity=argument.strip())
            written = f"Search[{argument}]"
        elif action == "search":
            observation, cursor = yield from block(tools(ctx).search, argument, cursor)
            if before is False:
                observation = REPEATED_MISS.format(entity=argument.strip(), observation=observation)
            written = f"Search[{argument}]"
        elif action == "lookup":
            observation, cursor = yield from block(tools(ctx).lookup, argument, cursor)
            written = f"Lookup[{argument}]"
        else:
            observation = INVALID_ACTION.format(error=pending.get("error") or "no action")
            written = pending.get("raw") or "(empty reply)"
        step = Step(thought=pending.get("thought", ""), action=written, observation=observation)
        steps = [*state.steps, step]
        update |= {
            "steps": steps,
            "cursor": cursor.as_dict(),
            "trajectory": [*state.trajectory, *_lines(step)],
        }
        if len(steps) >= ctx.max_steps:
            update |= {
                "done": True,
                "stop_reason": render("qa/react_step_limit", max_steps=str(ctx.max_steps)),
            }
        return update

    def after_think(state: ReactState) -> Literal["act", "__end__"]:
        return "__end__" if state.done else "act"

    def after_act(state: ReactState) -> Literal["think", "__end__"]:
        return "__end__" if state.done else "think"

    builder = StateGraph(
        ReactState, context_schema=ReActContext, input_schema=ReactInput, output_schema=ReactOutput
    )
    begin = trial_start(fresh, family=family, empty_task="give the question to answer")
    builder.add_node("begin", begin)
    builder.add_node("think", Node(think, role="actor", family=family))
    builder.add_node("act", Node(act, role="actor", family=family))
    builder.add_edge(START, "begin")
    builder.add_edge("begin", "think")
    builder.add_conditional_edges("think", after_think)
    builder.add_conditional_edges("act", after_act)
    return builder.compile(name="react-actor")
