"""The ALFWorld self-evaluators, as in the paper: a heuristic (the episode closed before the
step limit) and an LLM judge of the trajectory. Neither reads the engine's ``won`` flag."""

from __future__ import annotations

from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from reflexion.alfworld.context import AlfworldContext
from reflexion.alfworld.state import AlfworldState, graph_family
from reflexion.core.context import get_context
from reflexion.core.steps import Node, Steps, block
from reflexion.nodes.common import (
    judge_llm,
    trajectory_text,
)
from reflexion.nodes.evaluator import Evaluation, ask_judge
from reflexion.prompts import render, template


class AlfworldVerdict(BaseModel):
    """The LLM self-evaluator's structured answer."""

    reasoning: str = Field(description="One or two sentences on what the last steps show.")
    verdict: Literal["yes", "no"] = Field(description="Whether the task was completed.")


def heuristic_evaluation(state: AlfworldState) -> Evaluation:
    """The paper's heuristic self-evaluation: a trial succeeds when the environment closed
    the episode (which ALFWorld does when the goal is reached) before the heuristic held or
    the step limit ran out."""
    if state.stop_reason is None:
        return Evaluation(1.0, True, render("alfworld/feedback_done"))
    return Evaluation(0.0, False, render("alfworld/feedback_failed", reason=state.stop_reason))


def judge_messages(state: AlfworldState) -> list[BaseMessage]:
    user = render(
        "alfworld/judge_task", task=state.task.strip(), trajectory=trajectory_text(state.trajectory)
    )
    return [SystemMessage(render("alfworld/judge_system")), HumanMessage(user)]


def make_alfworld_evaluator(
    model: BaseChatModel | None = None,
) -> Node:
    """The evaluator node: the heuristic by default, the LLM judge (a binary classification
    of the trajectory by ``Context.evaluator_model``, or ``model``) with ``evaluator=llm``."""

    def evaluator(state: AlfworldState, runtime: Runtime[AlfworldContext]) -> Steps[Evaluation]:
        ctx = get_context(runtime, AlfworldContext)
        if ctx.evaluator == "llm":
            llm = yield from block(judge_llm, model, ctx)
            verdict = yield from ask_judge(llm, judge_messages(state), AlfworldVerdict)
            success = bool(verdict.success)
            label = "complete" if success else "not complete"
            if verdict.success is None:
                label = render("alfworld/judge_no_verdict")
            why = f": {verdict.feedback}" if verdict.feedback else ""
            feedback = template("alfworld/judge_verdict").format(label=label, why=why)
            if state.stop_reason and not success:
                feedback += " " + render("alfworld/judge_stopped", reason=state.stop_reason)
            result = Evaluation(float(success), success, feedback)
        else:
            result = heuristic_evaluation(state)
        return result  # the loop makes it the trial's record

    return Node(evaluator, role="evaluator", family=graph_family)
