"""The reflector's and the judge's prompts in the embedding API and the generic graph: worked
examples of no benchmark (the QA graphs keep their HotPotQA ones), and prompts of your own
(``reflector_prompt=``, ``evaluator_prompt=``) checked at build time and rendered per trial."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.prompts import ChatPromptTemplate

from reflexion.core.errors import ReflexionError
from reflexion.graphs.custom import create_reflexion_graph
from reflexion.graphs.generic import generic_builder
from reflexion.graphs.qa import qa_builder
from reflexion.harness.fakes import ScriptedChatModel
from reflexion.prompts import few_shot
from reflexion.qa.context import QAContext

TASK = {"task": "Which river flows through Prague?", "reference": "Vltava"}
HOTPOTQA_EXAMPLE = "University of Oxford or the University of Cambridge"
GENERIC_EXAMPLE = "Convert 5 miles to kilometres."
JUDGE_NO = '{"correct": false, "score": 0.2, "feedback": "Prague is not on the Elbe."}'
JUDGE_YES = '{"correct": true, "score": 0.9, "feedback": "Right."}'


def lesson_model() -> ScriptedChatModel:
    return ScriptedChatModel(replies=["Reflection: Prague lies on another river."])


def test_the_generic_reflector_shows_examples_of_no_benchmark():
    """The generic graph and create_reflexion_graph show the generic worked examples as turns;
    the QA graph still shows its HotPotQA ones."""
    for build in (
        lambda r: generic_builder(
            actor_model=ScriptedChatModel(replies=["Answer: Elbe", "Answer: Vltava"]),
            reflector_model=r,
        ).compile(),
        lambda r: create_reflexion_graph(
            ScriptedChatModel(replies=["Answer: Elbe", "Answer: Vltava"]),
            "exact_match",
            reflector_model=r,
        ),
    ):
        reflector = lesson_model()
        assert build(reflector).invoke(TASK)["solved"] is True
        text = reflector.prompt_text(0)
        assert GENERIC_EXAMPLE in text and HOTPOTQA_EXAMPLE not in text
        kinds = [m.type for m in reflector.prompts[0]]
        assert kinds == [
            "system",
            *["human", "ai"] * len(few_shot("common/generic_reflect_examples")),
            "human",
        ]

    qa_reflector = lesson_model()
    qa = qa_builder(
        actor_model=ScriptedChatModel(replies=["Thought: x.\nAction: Finish[Elbe]"] * 3),
        reflector_model=qa_reflector,
    ).compile()
    qa.invoke(TASK, context=QAContext(max_trials=2))
    assert HOTPOTQA_EXAMPLE in qa_reflector.prompt_text(0)
    assert GENERIC_EXAMPLE not in qa_reflector.prompt_text(0)


def test_every_generic_example_reads_as_a_lesson_on_the_generic_actors_form():
    """Each worked example is a failed attempt in the generic actor's form (Thought, Answer),
    its feedback, and a three-sentence lesson ending on what to do next time."""
    examples = few_shot("common/generic_reflect_examples")
    assert len(examples) == 3
    for example in examples:
        attempt, _, lesson = example.partition("\nReflection:")
        assert "\nThought:" in attempt and "\nAnswer:" in attempt and "\nFeedback:" in attempt
        assert lesson.count(". ") == 2 and "Next time I will" in lesson


def test_a_reflector_prompt_of_your_own_gets_the_failed_trial():
    """A string reflector prompt is one user message, rendered with the task, the passages, the
    failed attempt, its answer, the feedback and the trial; no worked examples are added, and a
    template's messages stay as they are."""
    reflector = lesson_model()
    actor = ScriptedChatModel(replies=["Thought: Germany's river.\nAnswer: Elbe", "Vltava"])
    graph = create_reflexion_graph(
        actor,
        lambda task, answer: answer == "Vltava",
        reflector_model=reflector,
        reflector_prompt="Trial {trial} of: {task}\nContext: {passages}\n{trajectory}\n"
        "Answer given: {answer}. Verdict: {feedback}. One lesson?",
    )
    state = graph.invoke({**TASK, "passages": "Prague is the capital of Czechia."})
    assert state["solved"] is True and state["reflections"] == ["Prague lies on another river."]
    assert [m.type for m in reflector.prompts[0]] == ["human"]
    assert reflector.prompt_text(0) == (
        "Trial 1 of: Which river flows through Prague?\n"
        "Context: Prague is the capital of Czechia.\n"
        "Thought: Germany's river.\nAnswer: Elbe\n"
        "Answer given: Elbe. Verdict: Answer is INCORRECT. One lesson?"
    )

    template = ChatPromptTemplate.from_messages(
        [
            ("system", "Write one lesson."),
            ("human", "Q: Capital of Peru?\nA: Cusco"),
            ("ai", "I named the old Inca capital; check the present one."),
            ("human", "Q: {task}\n{trajectory}"),
        ]
    )
    reflector = lesson_model()
    graph = create_reflexion_graph(
        ScriptedChatModel(replies=["Elbe", "Vltava"]),
        lambda task, answer: answer == "Vltava",
        reflector_model=reflector,
        reflector_prompt=template,
    )
    graph.invoke(TASK)
    assert [m.type for m in reflector.prompts[0]] == ["system", "human", "ai", "human"]
    assert reflector.prompts[0][-1].text == f"Q: {TASK['task']}\nAnswer: Elbe"


def test_a_judge_prompt_of_your_own_gets_the_attempt_and_decides():
    """evaluator_prompt replaces the LLM judge's prompt: the judge reads it rendered with the
    task and the answer (never the reference) and its verdict decides the loop."""
    judge = ScriptedChatModel(replies=[JUDGE_NO, JUDGE_YES])
    reflector = lesson_model()
    graph = create_reflexion_graph(
        ScriptedChatModel(replies=["Thought: a guess.\nAnswer: Elbe", "Answer: Vltava"]),
        judge,
        reflector_model=reflector,
        evaluator_prompt=ChatPromptTemplate.from_messages(
            [("system", "Grade strictly."), ("human", "{task}\nProposed: {answer} (trial {trial})")]
        ),
    )
    state = graph.invoke(TASK)
    assert [e["success"] for e in state["evaluations"]] == [False, True]
    assert [m.type for m in judge.prompts[0]] == ["system", "human"]
    assert judge.prompts[0][-1].text == f"{TASK['task']}\nProposed: Elbe (trial 1)"
    assert judge.prompts[1][-1].text == f"{TASK['task']}\nProposed: Vltava (trial 2)"
    assert "Prague is not on the Elbe." in reflector.prompt_text(0)


def function_judge(task: str, answer: str) -> bool:
    return True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reflector_prompt": "{task} {trajectory} {question}"}, r"reflector_prompt uses unknown variable\(s\) question"),
        ({"reflector_prompt": "{task} {answer}"}, r"reflector_prompt never uses \{trajectory\}"),
        ({"reflector_prompt": "{trajectory}"}, r"reflector_prompt never uses \{task\}"),
        ({"reflector_prompt": 3}, "reflector_prompt is a int"),
        ({"reflector_prompt": "{task} {trajectory"}, "reflector_prompt is not a template"),
        ({"evaluator_prompt": "{task} {trajectory}"}, r"evaluator_prompt never uses \{answer\}"),
        ({"evaluator_prompt": "{task} {answer} {feedback}"}, r"unknown variable\(s\) feedback"),
        ({"evaluator_prompt": 'Reply {"correct": true} {task} {answer}'}, r'unknown variable\(s\) "correct"'),
        ({"evaluator_prompt": "{task} {answer}", "evaluator": function_judge}, "evaluator_prompt is only used by the LLM judge, and the evaluator is a function"),
        ({"evaluator_prompt": "{task} {answer}", "evaluator": "exact_match"}, "the evaluator is 'exact_match'"),
    ],
)  # fmt: skip
def test_bad_reflector_and_judge_prompts_are_one_line_errors_at_build_time(
    kwargs: dict[str, Any], message: str
) -> None:
    """A missing or unknown placeholder, a prompt that is no template, or a judge prompt
    without a judge fails when the graph is built, with one line naming it."""
    args: dict[str, Any] = {"evaluator": ScriptedChatModel(replies=[JUDGE_YES]), **kwargs}
    with pytest.raises(ReflexionError, match=message) as info:
        create_reflexion_graph(lambda inputs: "x", args.pop("evaluator"), **args)
    assert "\n" not in str(info.value)
