"""The chain-of-thought actor: the node that makes one attempt (one trial) at a question.

It answers in one ``Thought`` / ``Finish[answer]`` step, with or without
the task's passages (the paper's CoT and CoT (GT) agents). The instructions and examples form a
prefix that stays the same across trials (llama.cpp reuses its KV cache for it); the memory
(:mod:`reflexion.nodes.memory`) goes just before the task, as in the paper.

Its retries follow ``Context.retry``: under ``informed_once`` (its default) the one informed
retry is drawn first from trial 1's prompt and reads the memory only when that draw repeats an
answer already judged incorrect (or gives none), and later retries are blind redraws; under
``informed`` every retry reads the memory (the paper); under ``resample`` none does. The
repeat guard (``Context.repeat_guard``) redraws a repeated rejected answer hotter and then
asks once more in a turn of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from reflexion.core.answers import normalize_answer
from reflexion.core.context import get_context
from reflexion.core.state import State
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.core.tracing import Family
from reflexion.models.providers import EmbeddedChatModel
from reflexion.nodes.common import actor_llm, named_seed
from reflexion.nodes.memory import memory_block
from reflexion.nodes.qa.retry_memory import judged_wrong, rejected_keys, with_memory
from reflexion.prompts import few_shot, render
from reflexion.qa.context import QA_FAMILY, QAContext
from reflexion.qa.parsing import FinishParse, parse_finish

STOP = ["\nQuestion:", "\nContext:", "\n---", "\nObservation"]

COT_GRAMMAR = r"""
root ::= "Thought: " thought "\nAction: Finish[" answer "]"
thought ::= [^\n]{1,800}
answer ::= [^\]\n]{1,120}
"""
"""Holds an embedded model to the ``Thought`` / ``Finish[answer]`` format."""


def _example_turns(example: str, *, with_passages: bool) -> list[BaseMessage]:
    """A few-shot example as a user turn (passages, question) and an assistant turn (reply)."""
    head, _sep, reply = example.partition("\nThought:")
    lines = [ln for ln in head.splitlines() if with_passages or not ln.startswith("Context:")]
    return [HumanMessage("\n".join(lines).strip()), AIMessage(("Thought:" + reply).strip())]


def cot_messages(
    state: State, ctx: QAContext, *, with_passages: bool, memory: bool = True
) -> list[BaseMessage]:
    """The chain-of-thought prompt: instructions, few-shot turns, then the task with its
    memory (:func:`~reflexion.nodes.qa.retry_memory.with_memory`; none when ``memory`` is False:
    trial 1's prompt).

    The examples are chat turns (small instruct models copy a format from turns far more
    reliably than from examples pasted into one message).
    """
    rule = "\n" + render("qa/cot_context_rule") if with_passages else ""
    messages: list[BaseMessage] = [SystemMessage(render("qa/cot_system", context_rule=rule))]
    for example in few_shot("qa/cot_examples"):
        messages.extend(_example_turns(example, with_passages=with_passages))
    context_block = f"Context: {state.passages.strip()}" if with_passages and state.passages else ""
    user = render("qa/cot_task", context_block=context_block, task=state.task.strip())
    block = memory_block(state, ctx) if memory else ""
    return [*messages, HumanMessage(with_memory(user, block))]


Seeder = Callable[[object], dict[str, Any]]
"""The call options that seed a draw, given the draw's name (:func:`draw_seeds`)."""


def draw_seeds(llm: BaseChatModel, state: State, ctx: QAContext) -> Seeder:
    """Seeds for this trial's draws: on a retry under ``Context.seeds`` = retry, named by
    the question, the trial and the draw, so strategies forking one trial 1 draw alike
    where their prompts agree; otherwise none (the model's own per-process counter)."""
    if state.trial == 0 or ctx.seeds != "retry":
        return lambda _draw: {}
    question = state.task_id or state.task
    return lambda draw: named_seed(llm, question, state.trial + 1, draw)


def _attempt(
    llm: BaseChatModel,
    messages: list[BaseMessage],
    options: dict[str, Any],
    seed: Seeder,
    draw: int,
) -> Steps[tuple[FinishParse, str]]:
    """One chain-of-thought reply (the trial's ``draw``-th), parsed, with its text; a reply
    without ``Finish[answer]`` gets one follow-up turn asking for the action alone (the
    paper's CoT prompts the thought and the action separately), whose answer counts while
    the thought stays."""
    reply = yield from ask(llm, messages, stop=STOP, **options, **seed(draw))
    parsed = parse_finish(reply.text)
    if parsed.answer is None and reply.text.strip():
        follow_up = HumanMessage(render("qa/cot_follow_up"))
        turns = [*messages, AIMessage(reply.text), follow_up]
        parsed = yield from _ask_again(llm, turns, parsed, seed(f"{draw}+"))
    return parsed, reply.text


def _ask_again(
    llm: BaseChatModel, turns: list[BaseMessage], parsed: FinishParse, seed: dict[str, Any]
) -> Steps[FinishParse]:
    """One more reply after ``turns`` (which end with the question asked); its answer replaces
    ``parsed``'s when it gives one, and the thought stays."""
    again = parse_finish((yield from ask(llm, turns, **seed)).text)
    if again.answer is None:
        return parsed
    return FinishParse(thought=parsed.thought, answer=again.answer)


def _keeps_memory(ctx: QAContext) -> bool:
    """Whether the strategy keeps a memory a retry could read."""
    return ctx.uses_reflections or ctx.uses_last_attempt


def _fresh_first(state: State, ctx: QAContext) -> set[str] | None:
    """The answers that send the informed retry of ``retry="informed_once"`` to its memory
    (it is drawn first without it): those judged incorrect so far; None when the retry draws
    with its memory from the start (trial 1, a strategy without memory, or ``informed``)."""
    if state.trial == 0 or not _keeps_memory(ctx) or ctx.retry != "informed_once":
        return None
    return judged_wrong(state, ctx)


def _blind(state: State, ctx: QAContext) -> bool:
    """Whether this retry is a blind redraw (:func:`_resample`): every retry under
    ``resample``, and under ``informed_once`` every retry after the first where the strategy
    keeps a memory."""
    if state.trial == 0:
        return False
    if ctx.retry == "resample":
        return True
    return ctx.retry == "informed_once" and state.trial >= 2 and _keeps_memory(ctx)


def _resample(
    state: State,
    ctx: QAContext,
    llm: BaseChatModel,
    model: BaseChatModel | None,
    options: dict[str, Any],
    seed: Seeder,
    with_passages: bool,
) -> Steps[tuple[FinishParse, str]]:
    """A blind retry (:func:`_blind`): drawn from trial 1's prompt (as the none baseline draws
    it, the same seed), and drawn again at the redraw temperature while its answer is one
    already judged incorrect (or none), as many times as a fresh-first retry may draw after its
    fresh draw (the memory's draw, ``repeat_guard`` redraws and, with the guard on, the
    correcting turn); the last draw stands when every one repeats."""
    prompt = cot_messages(state, ctx, with_passages=with_passages, memory=False)
    wrong = judged_wrong(state, ctx, resample=True)
    parsed, text = yield from _attempt(llm, prompt, options, seed, 0)
    hot: BaseChatModel | None = None
    for draw in range(1, 2 + ctx.repeat_guard + (ctx.repeat_guard > 0)):
        if parsed.answer is not None and normalize_answer(parsed.answer) not in wrong:
            break
        hot = hot or (yield from block(actor_llm, model, ctx, hot=True))
        parsed, text = yield from _attempt(hot, prompt, options, seed, draw)
    return parsed, text


def _update(parsed: FinishParse, text: str) -> dict[str, Any]:
    """The actor's attempt for one trial's parsed reply."""
    action = (
        f"Action: Finish[{parsed.answer}]"
        if parsed.answer is not None
        else f"Action: (unparseable: {parsed.error}) {text.strip()[:300]}"
    )
    return {
        "trajectory": [f"Thought: {parsed.thought}", action],
        "answer": parsed.answer,
        "stop_reason": None if parsed.answer is not None else parsed.error,
    }


def make_cot_actor(
    model: BaseChatModel | None = None, *, with_passages: bool = True, family: Family = QA_FAMILY
) -> Node:
    """A chain-of-thought actor node (its attempt; the loop keeps the trial's books);
    ``model`` overrides ``Context.actor_model``; ``family`` labels its model calls."""

    def actor(state: State, runtime: Runtime[QAContext]) -> Steps[dict[str, Any]]:
        ctx = get_context(runtime, QAContext)
        llm = yield from block(actor_llm, model, ctx)
        seed = draw_seeds(llm, state, ctx)
        options: dict[str, Any] = (
            {"gbnf": COT_GRAMMAR} if isinstance(llm, EmbeddedChatModel) else {}
        )
        if _blind(state, ctx):
            parsed, text = yield from _resample(
                state, ctx, llm, model, options, seed, with_passages
            )
            return _update(parsed, text)
        messages = cot_messages(state, ctx, with_passages=with_passages)
        rejected = rejected_keys(state, ctx)
        draw = 0
        known_wrong = _fresh_first(state, ctx)
        # fresh first: drawn as the none baseline draws it (trial 1's prompt, the same seed)
        first = (
            messages
            if known_wrong is None
            else cot_messages(state, ctx, with_passages=with_passages, memory=False)
        )
        parsed, text = yield from _attempt(llm, first, options, seed, draw)
        if known_wrong is not None:
            if parsed.answer is not None and normalize_answer(parsed.answer) not in known_wrong:
                rejected = set()  # kept: no redraw, no correcting turn
            else:  # it repeats a rejected answer or gives none: now the memory speaks
                draw += 1
                parsed, text = yield from _attempt(llm, messages, options, seed, draw)
        if parsed.answer is not None and normalize_answer(parsed.answer) in rejected:
            hot = yield from block(actor_llm, model, ctx, hot=True)
            for _ in range(ctx.repeat_guard):
                draw += 1
                again, again_text = yield from _attempt(hot, messages, options, seed, draw)
                if again.answer is not None and normalize_answer(again.answer) not in rejected:
                    parsed, text = again, again_text
                    break
        if parsed.answer and normalize_answer(parsed.answer) in rejected:
            # the guard's last step: one turn saying so and asking for another
            ask = HumanMessage(render("qa/cot_rejected", answer=parsed.answer))
            turns = [*messages, AIMessage(text), ask]
            parsed = yield from _ask_again(llm, turns, parsed, seed("correct"))
        return _update(parsed, text)

    name = "cot_gt_actor" if with_passages else "cot_actor"
    return Node(actor, role="actor", family=family, acts=True, name=name)
