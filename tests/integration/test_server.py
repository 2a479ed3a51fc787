"""`langgraph dev` serves our graphs offline and runs one on the embedded model."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reflexion.models import TEST_MODEL

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "langgraph-dev.log"
    log = log_path.open("wb")
    cli = Path(sys.executable).with_name("langgraph")
    proc = subprocess.Popen(
        [
            str(cli),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_NO_BROWSER": "1"},
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("langgraph dev exited: " + log_path.read_text()[-2000:])
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            raise RuntimeError("langgraph dev did not start within 120 s")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_every_graph_is_served_with_its_description(server):
    assistants = httpx.post(f"{server}/assistants/search", json={"limit": 50}, timeout=30).json()
    graphs = {a["graph_id"] for a in assistants}
    assert {
        "reflexion_qa",
        "reflexion_qa_cot",
        "reflexion_react",
        "reflexion_programming",
    } <= graphs
    schemas = httpx.get(
        f"{server}/assistants/{assistants[0]['assistant_id']}/schemas", timeout=30
    ).json()
    assert "memory_size" in schemas["context_schema"]["properties"]


def test_a_run_on_the_embedded_model(server):
    thread = httpx.post(f"{server}/threads", json={}, timeout=30).json()
    body = {
        "assistant_id": "reflexion_qa",
        "input": {
            "task": "Which river flows through Prague?",
            "context": "Prague lies on the Vltava river.",
            "reference": "Vltava",
        },
        "context": {
            "actor_model": TEST_MODEL,
            "evaluator_model": TEST_MODEL,
            "reflector_model": TEST_MODEL,
            "max_trials": 2,
            "max_tokens": 96,
        },
    }
    result = httpx.post(
        f"{server}/threads/{thread['thread_id']}/runs/wait", json=body, timeout=600
    ).json()
    assert result["trial"] in (1, 2), result
    assert len(result["evaluations"]) == result["trial"]


def test_a_react_run_on_the_offline_corpus(server):
    thread = httpx.post(f"{server}/threads", json={}, timeout=30).json()
    body = {
        "assistant_id": "reflexion_react",
        "input": {"task": "What is VIVA Media AG called since 2004?", "reference": "VIVA Media"},
        "context": {
            "actor_model": TEST_MODEL,
            "max_trials": 1,
            "max_steps": 2,
            "max_tokens": 192,  # room for a capped thought and the action
        },
    }
    result = httpx.post(
        f"{server}/threads/{thread['thread_id']}/runs/wait", json=body, timeout=600
    ).json()
    assert result["trial"] == 1, result
    state = httpx.get(f"{server}/threads/{thread['thread_id']}/state", timeout=30).json()
    trajectory = state["values"]["trajectory"]
    assert trajectory[1].startswith("Action: Search["), trajectory
    assert trajectory[2].startswith("Observation: "), trajectory
