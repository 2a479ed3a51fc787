"""``reflexion perf served``: runs at once on a real ``langgraph dev`` server against the fake
model server, none lost, each equal to the same run alone, faster than one after another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clikit import reflexion

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]


def test_runs_at_once_on_the_server_equal_the_runs_alone(tmp_path: Path) -> None:
    out = tmp_path / "served.json"
    args = ("perf", "served", "--runs", "6", "--latency", "0.1", "--json", str(out))
    reflexion(*args, cwd=tmp_path)
    figures = json.loads(out.read_text())["figures"]
    assert figures["lost"] == 0 and figures["solved"] == 6
    assert figures["equal_to_alone"] == 6 and figures["model_calls"] == 18
    assert figures["wall_s"] >= figures["ideal_wall_s"]  # no run beats its own latency
    assert 0 < figures["share_of_ideal"] <= 1
