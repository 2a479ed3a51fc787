"""Evaluators: score a finished trial.

The contract every evaluator meets (here and in the task modules) is :data:`EvaluateFn`: given
the state after the actor's trial and the run context, return an :class:`Evaluation` — a score
in [0, 1], a success flag and feedback text. Feedback is shown to the reflector, so it must not
reveal the reference answer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import BasePromptTemplate
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from reflexion.core.answers import exact_match
from reflexion.core.context import Context, get_context
from reflexion.core.errors import ProviderError, ReflexionError
from reflexion.core.state import State
from reflexion.core.steps import Node, Steps, ask, block
from reflexion.models.providers import EmbeddedChatModel
from reflexion.nodes.common import attempt_values, judge_llm, trajectory_text
from reflexion.nodes.replies import Verdict, parse_verdict, read_answer
from reflexion.prompts import render


@dataclass(frozen=True)
class Evaluation:
    """An evaluator's result for one trial; the loop makes it the trial's record
    (:func:`reflexion.graphs.loop.trial_record`)."""

    score: float
    success: bool
    feedback: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """A family's own keys of the trial record, after the five every record has (programming's
    ``compiled``, ``outcomes``, ``tests_passed``…: :class:`~reflexion.core.state.TrialRecord`)."""
    writes: Mapping[str, Any] = field(default_factory=dict)
    """Other state fields the evaluator writes with the record (programming's
    ``test_failures``)."""


CORRECT = render("common/verdict_correct")
"""The feedback of a successful trial, or how it starts."""
INCORRECT = render("common/verdict_incorrect")
"""The feedback of a failed trial, or how it starts."""

EvaluateFn = Callable[[State, Context], Evaluation]
"""The evaluator contract: (state after the trial, run context) -> Evaluation."""

EvaluateSteps = Callable[[State, Context], Steps[Evaluation]]
"""The same as node steps (:mod:`reflexion.core.steps`): an evaluator with an async path."""


def no_answer_evaluation(state: State, default: str | None = None) -> Evaluation:
    """A trial that gave no answer: failed, with why it stopped (``default`` when the actor
    recorded no reason, else ``prompts/common/no_finish.md``)."""
    reason = state.stop_reason or default or render("common/no_finish")
    return Evaluation(0.0, False, f"{INCORRECT}: {reason}")


def exact_match_evaluation(state: State, ctx: Context) -> Evaluation:
    """HotPotQA exact match against ``state.reference`` (binary, as in the paper)."""
    if state.reference is None:
        raise ReflexionError(
            "the exact_match evaluator needs a reference answer: pass one, or use evaluator=llm"
        )
    if state.answer is None:
        return no_answer_evaluation(state)
    ok = exact_match(state.answer, state.reference)
    return Evaluation(1.0 if ok else 0.0, ok, CORRECT if ok else INCORRECT)


class JudgeOutput(BaseModel):
    """Structured verdict requested from an LLM judge."""

    correct: bool = Field(description="Whether the final answer is correct.")
    score: float = Field(ge=0, le=1, description="Confidence that the answer is correct, 0-1.")
    feedback: str = Field(description="One sentence on what is right or wrong.")


JUDGE_VARIABLES = ("task", "passages", "trajectory", "answer", "trial")
"""What a judge prompt of your own may use (``create_reflexion_graph(evaluator_prompt=...)``):
the task, its passages (empty when none), the attempt's steps as text, its final answer
(``(none)`` when it gave none) and the 1-based number of the trial. Never the reference."""


def judge_values(state: State) -> dict[str, Any]:
    """The values of :data:`JUDGE_VARIABLES` for the trial just finished."""
    return attempt_values(state)


def judge_messages(
    state: State, template: BasePromptTemplate[Any] | None = None
) -> list[BaseMessage]:
    """The judge's prompt: ours (``prompts/common/judge_*.md``), or ``template`` rendered with
    :func:`judge_values`."""
    if template is not None:
        return template.invoke(judge_values(state)).to_messages()
    context_block = f"Context: {state.passages.strip()}" if state.passages else ""
    user = render(
        "common/judge_task",
        context_block=context_block,
        task=state.task.strip(),
        trajectory=trajectory_text(state.trajectory),
        answer=state.answer if state.answer is not None else "(none)",
    )
    return [SystemMessage(render("common/judge_system")), HumanMessage(user)]


def agreement_messages(state: State) -> list[BaseMessage]:
    """The judge's own question: the task and its passages, never the attempt."""
    context_block = f"Context: {state.passages.strip()}\n" if state.passages else ""
    user = render("common/agreement_task", context_block=context_block, task=state.task.strip())
    return [SystemMessage(render("common/agreement_system")), HumanMessage(user)]


def agreement_evaluation(model: BaseChatModel, state: State) -> Steps[Evaluation]:
    """Agreement between two independent answers (after CodeT's agreement between samples).

    The judge answers the task itself, without seeing the attempt, and the attempt succeeds
    when the two answers match (:func:`~reflexion.core.answers.exact_match`). The judge's
    answer is the first line of its reply, read as an actor's reply is (the text after its
    last ``Answer:`` marker, if it has one: :func:`~reflexion.nodes.replies.read_answer`). It
    is never shown: a retry that reaches it again is a second, independent draw of it.
    In the loop on HotPotQA CoT (GT) it agreed with gold 0.77 (0.5B) and 0.64 (1.5B) of the
    time, the yes/no judge 0.35 and 0.50 (docs/results/noisy-evidence.md)."""
    if state.answer is None:
        return no_answer_evaluation(state)
    reply = yield from ask(model, agreement_messages(state), stop=["\n\n"])
    first = next((line.strip() for line in reply.text.splitlines() if line.strip()), "")
    own, _ = read_answer(first)
    if own and exact_match(state.answer, own):
        return Evaluation(1.0, True, render("common/agreement_correct"))
    return Evaluation(0.0, False, render("common/agreement_incorrect"))


def ask_judge(
    model: BaseChatModel, messages: list[BaseMessage], schema: type[BaseModel] = JudgeOutput
) -> Steps[Verdict]:
    """A verdict from the judge: grammar-constrained JSON (``schema``) on the embedded model,
    structured output where the provider has it, robust text parsing otherwise."""
    if isinstance(model, EmbeddedChatModel):
        json_schema = schema.model_json_schema()
        reply = yield from ask(
            model, messages, response_format={"type": "json_object", "schema": json_schema}
        )
        return parse_verdict(reply.text)
    try:
        out = yield from ask(model.with_structured_output(schema), messages)
    except ProviderError:  # the provider failed past its retries: a second call would too
        raise
    except Exception:  # no structured output, or output that fails validation: parse text
        return parse_verdict((yield from ask(model, messages)).text)
    if isinstance(out, JudgeOutput):
        return Verdict(success=out.correct, score=out.score, feedback=out.feedback)
    if isinstance(out, BaseModel):
        return parse_verdict(out.model_dump_json())
    return parse_verdict(str(out))


def verdict_to_evaluation(verdict: Verdict, ctx: Context) -> Evaluation:
    """Apply the judge's verdict: yes/no, or with ``judge_threshold`` set, its score against it."""
    if verdict.success is None and verdict.score is None:
        return Evaluation(0.0, False, render("common/judge_no_verdict"))
    if ctx.judge_threshold is not None:  # a scored verdict
        score = verdict.score if verdict.score is not None else float(bool(verdict.success))
        success = score >= ctx.judge_threshold
    else:
        success = (
            bool(verdict.success)
            if verdict.success is not None
            else ((verdict.score or 0.0) >= ctx.score_threshold)
        )
        score = verdict.score if verdict.score is not None else float(success)
    label = CORRECT if success else INCORRECT
    return Evaluation(score, success, f"{label}: {verdict.feedback}" if verdict.feedback else label)


def llm_judge_evaluation(
    model: BaseChatModel,
    state: State,
    ctx: Context,
    template: BasePromptTemplate[Any] | None = None,
) -> Steps[Evaluation]:
    """The LLM judge's verdict on the trial (it never sees a reference answer), asked with
    our prompt or ``template`` (:func:`judge_messages`)."""
    verdict = yield from ask_judge(model, judge_messages(state, template))
    return verdict_to_evaluation(verdict, ctx)


def llm_judge(
    model: BaseChatModel | None = None, template: BasePromptTemplate[Any] | None = None
) -> EvaluateSteps:
    """The LLM judge as evaluator steps: on ``model`` (default ``Context.evaluator_model``),
    asked with ``template`` or our prompt (:func:`llm_judge_evaluation`)."""

    def judge(state: State, ctx: Context) -> Steps[Evaluation]:
        llm = yield from block(judge_llm, model, ctx)
        return (yield from llm_judge_evaluation(llm, state, ctx, template))

    return judge


def builtin_evaluation(model: BaseChatModel | None = None) -> EvaluateSteps:
    """The evaluator ``Context.evaluator`` names: exact match, the LLM judge or agreement with
    the judge's own answer, the judge on ``model`` (default ``Context.evaluator_model``)."""

    judge = llm_judge(model)

    def evaluate(state: State, ctx: Context) -> Steps[Evaluation]:
        if ctx.evaluator == "llm":
            return (yield from judge(state, ctx))
        if ctx.evaluator == "agreement":
            answerer = yield from block(judge_llm, model, ctx)
            return (yield from agreement_evaluation(answerer, state))
        return exact_match_evaluation(state, ctx)

    return evaluate


def make_evaluator(
    model: BaseChatModel | None = None, evaluate: EvaluateFn | EvaluateSteps | None = None
) -> Node:
    """The evaluator node: its :class:`Evaluation` of the trial (the loop builds the trial
    record from it, :func:`reflexion.graphs.loop.trial_record`).

    ``evaluate`` replaces the built-in evaluators (an :data:`EvaluateFn`, run in a worker
    thread on the async path, or a generator function of :data:`EvaluateSteps`); otherwise
    ``Context.evaluator`` picks exact match, the LLM judge or agreement with the judge
    model's own answer (whose model ``model`` overrides ``Context.evaluator_model``).
    """
    if evaluate is None:
        steps = builtin_evaluation(model)
    elif inspect.isgeneratorfunction(evaluate):
        steps = evaluate
    else:
        plain: Any = evaluate
        steps = lambda state, ctx: block(plain, state, ctx)  # noqa: E731

    def evaluator(state: State, runtime: Runtime[Context]) -> Steps[Evaluation]:
        return (yield from steps(state, get_context(runtime)))

    return Node(evaluator, role="evaluator")
