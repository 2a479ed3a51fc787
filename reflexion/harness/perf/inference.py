"""``reflexion perf inference``: the embedded model's prompt and generation speed, and what
llama.cpp's prefix cache saves on the repeated system prompt."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from rich.table import Column, Table

from reflexion.core.context import DEFAULT_MODEL
from reflexion.core.errors import ReflexionError
from reflexion.harness.bench.datasets import gold_passages, load_hotpotqa
from reflexion.harness.perf.machine import JsonOpt, report
from reflexion.models.providers import (
    LOCAL_PREFIX,
    EmbeddedChatModel,
    embedded_model,
    llama_messages,
)
from reflexion.qa.context import QAContext

GENERATION_PROMPT = [
    SystemMessage("You are a helpful programming assistant."),
    HumanMessage(
        "Write a complete Python module implementing a binary search tree class with insert, "
        "delete, search, minimum, maximum, height and in-order, pre-order and post-order "
        "traversal methods. Give every method a docstring, then write unit tests for each."
    ),
]
"""A request whose answer runs far past ``--tokens``, so every call generates that many."""


def _perf(llm: Any) -> dict[str, float]:
    """llama.cpp's timings of a context since its last reset (prompt and generation)."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(llm.ctx)
    return {
        "prompt_ms": float(data.t_p_eval_ms),
        "prompt_tokens_evaluated": int(data.n_p_eval),
        "gen_ms": float(data.t_eval_ms),
        "gen_tokens": int(data.n_eval),
    }


def _reset_perf(llm: Any) -> None:
    import llama_cpp

    llama_cpp.llama_perf_context_reset(llm.ctx)


def _timed(llm: Any, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one call, returning its wall time, token usage and llama.cpp timings."""
    _reset_perf(llm)
    started = time.perf_counter()
    usage = call()
    wall = time.perf_counter() - started
    return {"wall_s": wall, **usage, **_perf(llm)}


def _usage_of(message: AIMessage) -> dict[str, Any]:
    meta: dict[str, Any] = dict(message.usage_metadata or {})
    return {
        "prompt_tokens": int(meta.get("input_tokens", 0)),
        "completion_tokens": int(meta.get("output_tokens", 0)),
    }


def inference_figures(spec: str, tokens: int, reps: int) -> dict[str, Any]:
    """Generation speed of both paths (alternating, ``reps`` calls each) and the prompt
    processing of a trial-1 and a trial-2 actor prompt (prefix cache warm and cold)."""
    if not spec.startswith(LOCAL_PREFIX):
        raise ReflexionError(
            f"perf inference measures the embedded llama.cpp model; '{spec}' is not local:… "
            f"(e.g. {DEFAULT_MODEL})"
        )
    from reflexion.models.providers import _load_llama

    chat = embedded_model(
        spec[len(LOCAL_PREFIX) :], temperature=0.0, max_tokens=tokens, seed=0, slot="perf"
    )
    embedded_llm, _ = _load_llama(chat.model_path, chat.n_ctx, chat.slot)
    from llama_cpp import Llama

    from reflexion.models.cache import BATCH

    # The same settings _load_llama gives the embedded contexts.
    direct: Any = Llama(
        model_path=chat.model_path,
        n_ctx=chat.n_ctx,
        n_threads=os.cpu_count(),
        n_batch=BATCH,
        verbose=False,
    )
    try:
        dicts = llama_messages(GENERATION_PROMPT)

        def via_embedded() -> dict[str, Any]:
            return _usage_of(chat.invoke(GENERATION_PROMPT))

        def via_direct() -> dict[str, Any]:
            out = direct.create_chat_completion(
                messages=dicts, temperature=0.0, max_tokens=tokens, seed=0
            )
            usage = out.get("usage") or {}
            return {
                "prompt_tokens": int(usage.get("prompt_tokens", 0)),
                "completion_tokens": int(usage.get("completion_tokens", 0)),
            }

        runs: dict[str, list[dict[str, Any]]] = {"embedded": [], "direct": []}
        for rep in range(reps):
            order = [("embedded", embedded_llm, via_embedded), ("direct", direct, via_direct)]
            if rep % 2:
                order.reverse()
            for name, llm, call in order:
                runs[name].append(_timed(llm, call))
        generation = {name: _summarise(calls) for name, calls in runs.items()}
        prefix = _prefix_cache(chat, reps)
    finally:
        direct.close()
    return {"model": spec, "generation": generation, "prefix_cache": prefix}


def _summarise(calls: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [c["wall_s"] for c in calls]
    e2e = [c["completion_tokens"] / c["wall_s"] for c in calls if c["wall_s"] > 0]
    decode = [1000 * c["gen_tokens"] / c["gen_ms"] for c in calls if c["gen_ms"] > 0]
    return {
        "calls": len(calls),
        "completion_tokens": statistics.median(c["completion_tokens"] for c in calls),
        "wall_s_median": round(statistics.median(walls), 4),
        "tokens_per_s_median": round(statistics.median(e2e), 2) if e2e else None,
        "tokens_per_s_min": round(min(e2e), 2) if e2e else None,
        "tokens_per_s_max": round(max(e2e), 2) if e2e else None,
        "decode_tokens_per_s_median": round(statistics.median(decode), 2) if decode else None,
        "calls_detail": [
            {k: round(v, 4) if isinstance(v, float) else v for k, v in c.items()} for c in calls
        ],
    }


TRIAL2_REFLECTION = (
    "I answered with the first title in the context instead of the one the question asks "
    "about. Next time I will match the question's entity to its paragraph before finishing."
)


def _prefix_cache(chat: EmbeddedChatModel, reps: int) -> dict[str, Any]:
    """Prompt processing of the CoT (GT) actor's trial-1 prompt, then of its trial-2 prompt
    (a reflection appended after the stable prefix) right after it in the same context, and
    of the trial-2 prompt in a context whose cache was cleared. One token generated each."""
    from reflexion.core.state import State
    from reflexion.models.providers import _load_llama
    from reflexion.nodes.qa.actor import cot_messages

    question = load_hotpotqa(limit=1)[0]
    ctx = QAContext(strategy="reflexion", memory_size=3)
    first = State(task=question.question, passages=gold_passages(question))
    second = State(
        task=question.question, passages=gold_passages(question), reflections=[TRIAL2_REFLECTION]
    )
    trial1 = cot_messages(first, ctx, with_passages=True)
    trial2 = cot_messages(second, ctx, with_passages=True)
    probe = chat.model_copy(update={"max_tokens": 1, "slot": "perf-prefix"})
    llm, _ = _load_llama(probe.model_path, probe.n_ctx, probe.slot)

    def call(messages: list[BaseMessage]) -> Callable[[], dict[str, Any]]:
        return lambda: _usage_of(probe.invoke(messages))

    rows: dict[str, list[dict[str, Any]]] = {"trial 1 (cold)": [], "trial 2 after trial 1": []}
    rows["trial 2 (cold)"] = []
    for _ in range(reps):
        llm.reset()
        rows["trial 1 (cold)"].append(_timed(llm, call(trial1)))
        rows["trial 2 after trial 1"].append(_timed(llm, call(trial2)))
        llm.reset()
        rows["trial 2 (cold)"].append(_timed(llm, call(trial2)))
    out: dict[str, Any] = {}
    for name, calls in rows.items():
        out[name] = {
            "prompt_tokens": calls[0]["prompt_tokens"],
            "tokens_evaluated": statistics.median(
                c["prompt_tokens_evaluated"] + c["gen_tokens"] for c in calls
            ),
            "prompt_ms_median": round(
                statistics.median(c["prompt_ms"] + c["gen_ms"] for c in calls), 2
            ),
            "wall_ms_median": round(1000 * statistics.median(c["wall_s"] for c in calls), 2),
        }
    return out


def inference(
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="An embedded model: local:<preset> or local:/path.gguf."
        ),
    ] = DEFAULT_MODEL,
    tokens: Annotated[
        int, typer.Option("--tokens", metavar="N", min=1, help="max_tokens of each generation.")
    ] = 128,
    reps: Annotated[int, typer.Option("--reps", metavar="N", min=1, help="Calls per path.")] = 3,
    json_path: JsonOpt = None,
) -> None:
    """Tokens/s of the embedded path (EmbeddedChatModel.invoke) against llama-cpp-python's
    create_chat_completion with the same model, context size, threads, temperature 0 and
    max_tokens; and prompt processing of trial 2 vs trial 1 (llama.cpp's prefix cache)."""
    fig = inference_figures(model, tokens, reps)
    gen = Table(
        Column("path", no_wrap=True),
        "calls",
        "tokens",
        "wall s",
        "tok/s (min–max)",
        "decode tok/s",
        title=f"generation, {model}, max_tokens={tokens}, temperature 0",
    )
    labels = {
        "embedded": "EmbeddedChatModel.invoke",
        "direct": "Llama.create_chat_completion",
    }
    for name, g in fig["generation"].items():
        gen.add_row(
            labels[name],
            str(g["calls"]),
            f"{g['completion_tokens']:g}",
            f"{g['wall_s_median']:.3f}",
            f"{g['tokens_per_s_median']} ({g['tokens_per_s_min']}–{g['tokens_per_s_max']})",
            str(g["decode_tokens_per_s_median"]),
        )
    e, d = fig["generation"]["embedded"], fig["generation"]["direct"]
    if e["wall_s_median"] and d["wall_s_median"]:
        gen.caption = (
            f"embedded path / direct wall time: {e['wall_s_median'] / d['wall_s_median']:.3f}; "
            "medians; tok/s = completion tokens / wall time of the call; decode tok/s = "
            "llama.cpp's own generation timing; calls alternate between the paths"
        )
    prefix = Table(
        Column("actor prompt", no_wrap=True),
        "prompt tokens",
        "evaluated",
        "prompt ms",
        "wall ms",
        title="CoT (GT) actor: prefix-cache reuse between trials (medians)",
    )
    for name, p in fig["prefix_cache"].items():
        prefix.add_row(
            name,
            str(p["prompt_tokens"]),
            f"{p['tokens_evaluated']:g}",
            f"{p['prompt_ms_median']:.1f}",
            f"{p['wall_ms_median']:.1f}",
        )
    prefix.caption = (
        "medians; trial 2 = trial 1's prompt with one reflection appended after the task "
        "(nodes/memory.py memory_block); 'after trial 1' runs in the same llama.cpp context, "
        "'cold' after a reset; evaluated = tokens llama.cpp processed (the rest came from its "
        "cache); prompt ms = llama.cpp's prompt timing; wall ms = the call, one token generated"
    )
    settings = {"model": model, "tokens": tokens, "reps": reps}
    report("inference", [gen, prefix], fig, settings, json_path)


# ---- learning cost: tokens per solved task -----------------------------------------------------
