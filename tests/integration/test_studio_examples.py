"""What a Studio user does, through the SDK: ``langgraph dev``, then every served graph run once
with the example input the server guide gives it, on a fake OpenAI-compatible model named in
the server's environment; and the schemas Studio reads carry an example for every input."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from reflexion.core.context import MODEL_VARIABLE
from tests.langgraph_server import langgraph_dev
from tests.unit.test_faults import FakeOpenAI
from tests.unit.test_studio_inputs import examples

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

EXAMPLES = examples()


def reply(body: dict[str, Any]) -> str:
    """A model that plays every role of the seven graphs well enough to finish a trial."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    if "def add" in text:
        return "ok:```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    if "Your task is to" in text:
        return "ok:look"
    if "Search[" in text:
        return "ok:Thought: I know it.\nAction: Finish[Creature Comforts]"
    if "Finish[" in text:
        return "ok:Thought: the passage says so.\nAction: Finish[Vltava]"
    return "ok:Thought: easy.\nAnswer: Vltava"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncLangGraphClient]:
    model = FakeOpenAI(reply)
    threading.Thread(target=model.serve_forever, kwargs={"poll_interval": 0.05}).start()
    env = {
        MODEL_VARIABLE: "openai:any-name",
        "REFLEXION_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-test-dummy",
    }
    try:
        with (
            langgraph_dev(tmp_path_factory.mktemp("studio"), env=env) as url,
            get_sync_client(url=url, api_key=None) as sdk,
        ):
            yield sdk
    finally:
        model.shutdown()
        model.server_close()


@pytest.mark.parametrize("graph", sorted(EXAMPLES))
def test_every_graph_runs_its_documented_example(client, graph):
    context: dict[str, Any] = {"max_trials": 1}
    if graph == "reflexion_alfworld":
        context["alfworld_steps"] = 3
    thread = client.threads.create()
    result = client.runs.wait(
        thread["thread_id"], graph, input=EXAMPLES[graph], context=context, raise_error=False
    )
    assert isinstance(result, dict) and "__error__" not in result, result
    assert len(result["evaluations"]) == 1, result
    if graph != "reflexion_alfworld":  # three turns cannot win a game
        assert result["solved"] is True, result


def test_the_schemas_studio_reads_give_every_input_an_example(client):
    for assistant in client.assistants.search(limit=20):
        fields = client.assistants.get_schemas(assistant["assistant_id"])["input_schema"]
        plain = [
            k for k, v in fields["properties"].items() if "Example" not in v.get("description", "")
        ]
        assert plain == [], (assistant["graph_id"], plain)
