"""How well a judge with no reference tells right answers from wrong, on recorded attempts.

The figures of "Three judges on the same attempts" in docs/results/noisy-evidence.md. Two steps:

1. ``dump DB RESULTS... OUT``: every distinct attempt (question, context, the actor's reasoning
   and answer) the post-actor checkpoints of a QA thread database hold, with whether it is
   right on gold (exact match against the reference the results files name). The 1.5B
   model's no-oracle run gives ``hotpotqa-llm-15b-attempts.json`` beside this file.
2. ``judge ATTEMPTS VARIANT MODEL``: judge each attempt again and print the confusion counts
   against gold. ``recorded``: the product's judge, read from the results files' trial lines
   (the judge runs at T = 0, so this is what it says); ``reasoned``: a judge told to quote
   the context's evidence and work the answer out before its verdict (the JSON asks for the
   evidence first); ``blind``: the judge model answers the question from the context without
   seeing the attempt, and the attempt is right when the two answers match (exact match).

Run from the repository root with the project's environment, e.g.
``python runs/measured/noisy/judge_probe.py judge runs/measured/noisy/hotpotqa-llm-15b-attempts.json
blind local:qwen2.5-coder-1.5b``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from reflexion.bench.ledger import finished_tasks, read_results
from reflexion.core.answers import exact_match
from reflexion.core.models import load_chat_model
from reflexion.core.persistence import open_checkpointer
from reflexion.core.state import State
from reflexion.graphs.qa import qa_builder
from reflexion.nodes.evaluator import ask_judge, judge_messages

REASONED = (
    "You are a strict grader. You will see a question, context passages, and an agent's "
    "reasoning and final answer. The agent's reasoning may be wrong: do not trust it. First "
    "find in the context what answers the question, quoting it, and work out the answer "
    "yourself. Then compare: the final answer is correct only if it names the same thing as "
    "the answer you worked out, and answers exactly what the question asks (for a yes/no "
    'question, yes or no; for "which of the two", one of the two). Reply with a JSON object '
    'and nothing else:\n{"check": "the quoted evidence and the answer it gives", "correct": '
    'true or false, "score": a number from 0 to 1, "feedback": "one sentence on what is '
    'right or wrong"}'
)
BLIND = (
    "Answer the question using the context. Reply with the answer alone: a short phrase such "
    "as a name, a number, a date, or yes or no. No explanation."
)


class Reasoned(BaseModel):
    """The reasoned judge's reply: the evidence first, then the verdict."""

    check: str = Field(description="The quoted evidence and the answer it gives.")
    correct: bool = Field(description="Whether the final answer is correct.")
    score: float = Field(ge=0, le=1)
    feedback: str = Field(description="One sentence on what is right or wrong.")


def dump(db: str, results: list[str], out: str) -> None:
    reference = {
        str(f["task_id"]): str(f["reference"])
        for path in results
        for f in finished_tasks(Path(path)).values()
    }
    with sqlite3.connect(db) as conn:
        threads = [t for (t,) in conn.execute("select distinct thread_id from checkpoints")]
    rows: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    with open_checkpointer(db) as saver:
        graph = qa_builder(with_passages=True).compile(checkpointer=saver)
        for thread in threads:
            task_id = thread.split("-", 2)[2]
            config: RunnableConfig = {"configurable": {"thread_id": thread}}
            for snap in reversed(list(graph.get_state_history(config))):
                if not snap.next or snap.next[0] != "evaluator":
                    continue
                v = snap.values
                key = (task_id, v["trial"], v.get("answer"), tuple(v.get("trajectory") or ()))
                if key in seen:
                    continue
                seen.add(key)
                answer = v.get("answer")
                rows.append(
                    {
                        "task_id": task_id,
                        "trial": v["trial"],
                        "task": v["task"],
                        "context": v.get("context") or "",
                        "trajectory": v.get("trajectory") or [],
                        "answer": answer,
                        "reference": reference[task_id],
                        "gold": answer is not None and exact_match(answer, reference[task_id]),
                    }
                )
    Path(out).write_text(json.dumps(rows, indent=1))
    print(f"{len(rows)} attempts, {sum(r['gold'] for r in rows)} right on gold")


def recorded(attempts: list[dict[str, Any]], results: list[str]) -> list[bool]:
    verdict: dict[tuple[str, int, Any], bool] = {}
    for path in results:
        for row in read_results(Path(path)):
            if row.get("type") == "trial":
                task_id = str(row["thread_id"]).split("-", 2)[2]
                key = (task_id, int(row["trial"]), row.get("answer"))
                verdict.setdefault(key, bool(row["success"]))
    return [verdict[(a["task_id"], a["trial"], a["answer"])] for a in attempts]


def judged(attempts: list[dict[str, Any]], variant: str, model: str) -> list[bool]:
    tokens = 768 if variant == "reasoned" else 32
    llm = load_chat_model(model, temperature=0.0, max_tokens=tokens, slot="evaluator")
    verdicts = []
    for a in attempts:
        if variant == "reasoned":
            state = State(
                task=a["task"],
                passages=a["context"],
                trajectory=a["trajectory"],
                answer=a["answer"],
            )
            user = judge_messages(state)[1]
            verdict = ask_judge(llm, [SystemMessage(REASONED), user], Reasoned)
            verdicts.append(bool(verdict.success))
        else:
            user = f"Context: {a['context'].strip()}\n\nQuestion: {a['task'].strip()}\nAnswer:"
            reply = llm.invoke([SystemMessage(BLIND), HumanMessage(user)])
            own = (reply.text.strip().splitlines() or [""])[0]
            verdicts.append(bool(a["answer"]) and exact_match(a["answer"], own))
    return verdicts


def main(argv: list[str]) -> None:
    if len(argv) >= 4 and argv[0] == "dump":
        dump(argv[1], argv[2:-1], argv[-1])
        return
    if len(argv) < 3 or argv[0] != "judge" or argv[2] not in ("recorded", "reasoned", "blind"):
        sys.exit(
            "usage: judge_probe.py dump DB RESULTS... OUT | "
            "judge ATTEMPTS recorded RESULTS... | judge ATTEMPTS reasoned|blind MODEL"
        )
    attempts = json.loads(Path(argv[1]).read_text())
    ok = recorded(attempts, argv[3:]) if argv[2] == "recorded" else judged(attempts, *argv[2:4])
    gold = [bool(a["gold"]) for a in attempts]
    tp = sum(o and g for o, g in zip(ok, gold, strict=True))
    fp = sum(o and not g for o, g in zip(ok, gold, strict=True))
    fn = sum(g and not o for o, g in zip(ok, gold, strict=True))
    tn = len(ok) - tp - fp - fn
    print(f"{argv[2]}: TP {tp} FP {fp} FN {fn} TN {tn}, agreement {(tp + tn) / len(ok):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
