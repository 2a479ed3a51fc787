"""A server runs as built: a fresh environment holding exactly what langgraph.json declares
(and the ``langgraph`` command that serves it), ``langgraph dev`` started from it, and every
graph run once through the SDK on its own default model, the embedded one (each with one
trial and a short budget, to keep the run small). A model that cannot run there fails the
run with one line naming both fixes, as the SDK reports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from reflexion.alfworld.games import load_games
from reflexion.core.context import MODEL_VARIABLE
from reflexion.harness.bench.datasets import select_games
from tests.langgraph_server import ROOT, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

ADD = 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n'
PRAGUE = {
    "task": "Which river flows through Prague?",
    "passages": "Prague lies on the Vltava, the longest river in the Czech Republic.",
    "reference": "Vltava",
}


def declared() -> list[str]:
    """langgraph.json's dependencies, the local path made absolute."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    return [str(ROOT) if d == "." else d for d in config["dependencies"]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with langgraph.json's dependencies and the dev server (pip's cache keeps
    the compiled wheels, llama.cpp's among them); its interpreter."""
    venv = tmp_path_factory.mktemp("as-built") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    server = f"langgraph-cli[inmem]=={metadata.version('langgraph-cli')}"
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *declared(), server],
        check=True,
        env=env,
        timeout=1800,
    )
    return python


@pytest.fixture(scope="module")
def client(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncLangGraphClient]:
    env = {"OPENAI_API_KEY": "", MODEL_VARIABLE: ""}  # the defaults, and no key
    workdir = tmp_path_factory.mktemp("as-built-server")
    with (
        langgraph_dev(workdir, python=built, env=env, start_timeout=300) as url,
        get_sync_client(url=url, api_key=None) as sdk,
    ):
        yield sdk


def run(client: SyncLangGraphClient, graph: str, task: dict[str, Any], **ctx: Any) -> Any:
    thread = client.threads.create()
    return client.runs.wait(
        thread["thread_id"],
        graph,
        input=task,
        context={"max_trials": 1, **ctx},
        config={"recursion_limit": 100},
        raise_error=False,
    )


def test_the_environment_holds_what_langgraph_json_declares_and_no_harness(built, tmp_path):
    """(Run outside the repository, whose own ``reflexion`` folder would shadow the one
    installed.)"""
    found = subprocess.run(
        [str(built), "-c", "import llama_cpp, textworld, reflexion.graphs.alfworld; print('ok')"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert found.stdout.strip() == "ok", found.stderr[-2000:]
    harness = subprocess.run(
        [str(built), "-c", "import matplotlib"], capture_output=True, cwd=tmp_path
    )
    assert harness.returncode != 0, "the harness's plotting library came with the runtime"


GAME = select_games(load_games(), 1)[0].name
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("reflexion", PRAGUE, {}),
    ("reflexion_qa", PRAGUE, {}),
    ("reflexion_qa_cot", {"task": PRAGUE["task"], "reference": "Vltava"}, {}),
    ("reflexion_react", {"task": PRAGUE["task"], "reference": "Vltava"}, {"max_steps": 2}),
    ("reflexion_programming", {"task": ADD, "entry_point": "add", "task_id": "add"}, {}),
    ("reflexion_alfworld", {"game": GAME}, {"alfworld_steps": 3}),
]


@pytest.mark.parametrize(("graph", "task", "ctx"), CASES, ids=[c[0] for c in CASES])
def test_every_graph_runs_on_its_default_model(client, graph, task, ctx):
    result = run(client, graph, task, **ctx)
    assert isinstance(result, dict) and "__error__" not in result, result
    assert len(result["evaluations"]) == 1, result


def test_a_model_without_its_key_fails_the_run_in_one_line_naming_both_fixes(client):
    result = run(client, "reflexion_qa", PRAGUE, actor_model="openai:gpt-4o-mini")
    error = result["__error__"] if isinstance(result, dict) else None
    assert error is not None, result
    message = error["message"]
    assert "\n" not in message and "Traceback" not in message, message
    assert "export OPENAI_API_KEY=" in message and MODEL_VARIABLE in message, message
