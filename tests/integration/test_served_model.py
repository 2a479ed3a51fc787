"""A real served model: the embedded SmolLM2 weights behind llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server``, the ``local`` extra's ``[server]``) on loopback, and the
Reflexion loop reaching it through ``ChatOpenAI`` (``openai:<alias>`` + the transport's base URL),
one thread at a time and four at once."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from reflexion import Context, create_reflexion_graph
from reflexion.harness.bench.usage import UsageRecorder, totals
from reflexion.harness.processes import free_port, serving
from reflexion.models.providers import resolve_preset
from reflexion.models.transport import Transport, using_transport
from tests.integration.test_embedded import TEST_MODEL

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

ALIAS = "smollm2-135m"
MODEL = f"openai:{ALIAS}"
MAX_TOKENS = 48
TASKS = (
    "What is the capital of France?",
    "How many legs does a spider have?",
    "Which planet is closest to the sun?",
    "What colour is a ripe banana?",
)
UNREACHABLE = "zq-unreachable-answer"
"""Every task's reference: no reply matches it, so each thread runs two trials and reflects
once (three model calls), whatever the model says."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` serving the smallest embedded model on a free loopback
    port; yields its base URL once ``/v1/models`` answers, and stops it (SIGTERM, then
    SIGKILL) at the end. Its log is ``llama-server.log`` in a fresh directory."""
    gguf = resolve_preset(TEST_MODEL.removeprefix("local:"))
    port = free_port()
    log_path = tmp_path_factory.mktemp("served") / "llama-server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--verbose", "false",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    with serving(command, f"{url}/models", log_path, name="llama_cpp.server"):
        yield url


def run_tasks(url: str, concurrency: int) -> list[dict[str, Any]]:
    """Every task on its own thread of the generic graph, ``concurrency`` threads at once,
    the actor, reflector and judge all ``openai:<alias>`` at T = 0 on the server at ``url``;
    each thread's output and its usage totals."""
    graph = create_reflexion_graph(MODEL, "exact_match", checkpointer=InMemorySaver())
    ctx = Context(
        actor_model=MODEL,
        reflector_model=MODEL,
        evaluator_model=MODEL,
        max_trials=2,
        temperature=0.0,
        max_tokens=MAX_TOKENS,
    )

    def one(i: int) -> dict[str, Any]:
        recorder = UsageRecorder()
        config = {"configurable": {"thread_id": f"c{concurrency}-{i}"}, "callbacks": [recorder]}
        task = {"task": TASKS[i], "reference": UNREACHABLE, "task_id": str(i)}
        out = graph.invoke(task, config, context=ctx)
        kept = {k: out[k] for k in ("answer", "trial", "evaluations", "reflections")}
        return {**kept, "usage": totals(recorder.take())}

    with (
        using_transport(Transport(base_url=url, max_retries=0, request_timeout=600)),
        ThreadPoolExecutor(concurrency) as pool,
    ):
        return list(pool.map(one, range(len(TASKS))))


def test_the_loop_through_chatopenai_one_and_four_threads_at_once(served: str) -> None:
    alone = run_tasks(served, 1)
    together = run_tasks(served, 4)
    for result in alone:
        assert result["trial"] == 2
        assert [e["trial"] for e in result["evaluations"]] == [1, 2]
        for record in result["evaluations"]:
            assert set(record) == {"trial", "answer", "score", "success", "feedback"}
            assert isinstance(record["answer"], str) and record["answer"].strip()
            assert record["score"] == 0.0 and record["success"] is False
            assert record["feedback"].startswith("Answer is INCORRECT")
        assert result["answer"] in [e["answer"] for e in result["evaluations"]]
        [reflection] = result["reflections"]
        assert isinstance(reflection, str) and reflection.strip()
        usage = result["usage"]
        assert usage["calls"] == 3  # actor, reflector, actor
        assert usage["prompt_tokens"] > 100
        # The server reported the replies' tokens, each reply held to the cap.
        assert 0 < usage["completion_tokens"] <= 3 * MAX_TOKENS

    # At T = 0 the server draws the same text whatever else it serves meanwhile.
    def same(result: dict[str, Any]) -> dict[str, Any]:
        counts = {k: result["usage"][k] for k in ("prompt_tokens", "completion_tokens", "calls")}
        return {**{k: v for k, v in result.items() if k != "usage"}, "usage": counts}

    assert [same(r) for r in together] == [same(r) for r in alone]


def test_the_server_honours_a_seed_where_its_prompt_cache_agrees(served: str) -> None:
    """A ``seed`` reaches the sampler (the QA actors' seeded retries rely on it): after the
    same request, the same seed at T = 0.8 draws the same text and another seed another text.
    The draw also depends on the server's prompt cache (measured: the same prompt sent twice
    in a row draws another text the second time, its prompt not evaluated again), so every
    draw here follows the same other request."""
    chat = ChatOpenAI(
        model=ALIAS, base_url=served, api_key="not-needed", temperature=0.8, max_tokens=24
    )
    other, prompt = "Name three fruits.", "Write one sentence about the sea."

    def draw(seed: int) -> str:
        chat.invoke(other, seed=1)  # the same cache state before every draw
        return chat.invoke(prompt, seed=seed).text

    first = draw(11)
    assert draw(11) == first
    assert draw(12) != first
