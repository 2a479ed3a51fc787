"""Reflexion around your own actor and evaluator: the public API for LangChain users.

:func:`create_reflexion_graph` takes an actor (a chat model plus a prompt, or any Runnable or
callable: :mod:`reflexion.nodes.actor`), an evaluator (a Python function, or an LLM judge:
:mod:`reflexion.nodes.user_evaluator`) and puts our self-reflector between them in the
Reflexion loop of :func:`graphs.loop.build_reflexion_graph`. The result is a compiled LangGraph
graph: invoke or stream it directly, or add it to your own graph as a subgraph.

Run settings (trial limit, Ω, retries, judge mode and threshold, models named by string) come
from the runtime context, as in every graph here: pass ``context=Context(max_trials=5)`` to
``invoke``/``stream``; with no context the :class:`~reflexion.core.context.Context` defaults apply.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from reflexion.core.context import Context, get_context
from reflexion.core.state import State
from reflexion.core.steps import Steps
from reflexion.graphs.loop import build_reflexion_graph
from reflexion.nodes.actor import ACTOR_VARIABLES, ActorSpec, make_actor, read_reply
from reflexion.nodes.evaluator import JUDGE_VARIABLES, Evaluation
from reflexion.nodes.reflector import GENERIC_REFLECT_EXAMPLES, REFLECTOR_VARIABLES, make_reflector
from reflexion.nodes.templates import user_template
from reflexion.nodes.user_evaluator import EvaluatorSpec, user_evaluation

__all__ = [
    "ACTOR_VARIABLES",
    "JUDGE_VARIABLES",
    "REFLECTOR_VARIABLES",
    "Evaluation",
    "create_reflexion_graph",
    "read_reply",
]


def create_reflexion_graph(
    actor: ActorSpec,
    evaluator: EvaluatorSpec,
    *,
    reflector_model: BaseChatModel | str | None = None,
    prompt: ChatPromptTemplate | str | None = None,
    reflector_prompt: ChatPromptTemplate | str | None = None,
    evaluator_prompt: ChatPromptTemplate | str | None = None,
    name: str = "reflexion",
    checkpointer: Checkpointer = None,
) -> CompiledStateGraph[Any, Context, Any, Any]:
    """A compiled Reflexion graph around your own actor and evaluator, with our reflector.

    ``actor`` is one of:

    - a chat model (or a ``provider:model`` string): it gets ``prompt`` — a
      ChatPromptTemplate, or a string taken as one user message, using ``{task}`` and any of
      ``{passages}``, ``{reflections}`` (the last Ω lessons, one ``- `` line each),
      ``{memory}`` (those, and the last attempt under the ``last_attempt`` strategies, with
      headings) and ``{trial}``
      — or, without one, our generic actor prompt. Its reply is read by
      :func:`read_reply` (the text after the last ``Answer:`` marker, else the whole reply);
    - any Runnable (``prompt | model | parser``, an agent) or function: called with a dict of
      ``task``, ``passages``, ``reflections`` (a list of str), ``memory`` and
      ``trial``; it
      returns a str or an AIMessage (read as above) or a dict with ``answer`` and, optionally,
      ``trajectory`` (a list of str: what the reflector sees of the trial).

    ``evaluator`` is a function — ``(state)``, ``(task, answer)`` or
    ``(task, answer, reference)``, told apart by how many positional arguments it requires —
    returning a bool, a score in [0, 1] (success at ``Context.judge_threshold``, 0.5 by
    default, or above) or an :class:`Evaluation`; or ``"llm"`` (our LLM judge on
    ``Context.evaluator_model``), a chat model (the judge on it), or ``"exact_match"``.

    ``reflector_model`` overrides ``Context.reflector_model``. Our reflector's worked examples
    belong to no benchmark (``prompts/common/generic_reflect_examples.md``). ``reflector_prompt``
    replaces its whole prompt, examples included: a ChatPromptTemplate or a string (one user
    message) using ``{task}``, ``{trajectory}`` (the failed attempt's steps) and any of
    ``{passages}``, ``{answer}``, ``{feedback}`` (the evaluator's) and ``{trial}``; the reply is
    the lesson. ``evaluator_prompt`` replaces the LLM judge's prompt (``"llm"`` or a chat
    model only), using ``{task}``, ``{answer}`` and any of ``{passages}``, ``{trajectory}`` and
    ``{trial}``; the judge still replies with a verdict (structured output where the model has
    it). Either prompt naming another variable, or missing a required one, is a one-line
    error at build time. ``name`` names the compiled
    graph and is the task family its model calls are labelled with. The graph's input is
    ``task``,
    ``passages``, ``reference`` (seen only by evaluators), ``task_id``; its output ``answer``,
    ``solved``, ``trial``, ``evaluations``, ``reflections``, ``stopped`` and ``spent``. Loop
    settings come from the run's context:
    ``graph.invoke(input, config, context=Context(max_trials=5, memory_size=1))``.
    ``checkpointer`` goes to ``compile``; leave it out for
    a subgraph (it uses its parent's) and for a LangGraph server.
    """
    actor_node = make_actor(actor, prompt, family=name)
    evaluate = user_evaluation(evaluator, evaluator_prompt)

    def user_evaluator(state: State, runtime: Runtime[Context]) -> Steps[Evaluation]:
        return (yield from evaluate(state, get_context(runtime)))

    template = (
        user_template(
            reflector_prompt, "reflector_prompt", REFLECTOR_VARIABLES, ("task", "trajectory")
        )
        if reflector_prompt is not None
        else None
    )
    reflector = make_reflector(
        reflector_model, examples=GENERIC_REFLECT_EXAMPLES, family=name, template=template
    )
    return build_reflexion_graph(actor_node, user_evaluator, reflector, family=name).compile(
        checkpointer=checkpointer, name=name
    )
