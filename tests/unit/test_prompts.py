"""Every model-facing text is a prompt file: each file loads through the loader (templates
in LangChain's f-string syntax, few-shot files as their examples), and no node or graph
module holds a long string literal that would be prompt text written in code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from langchain_core.prompts import PromptTemplate

from reflexion.prompts import FOLDERS, few_shot, prompt_names, render, template

ROOT = Path(__file__).parents[2]
LONGEST = 80
"""Longer string literals in nodes/ and graphs/ are prompt text and belong in prompts/."""
NOT_PROMPTS = {"COT_GRAMMAR", "REACT_GRAMMAR", "REVIEW_HELP"}
"""Long constants no model reads as text: llama.cpp grammars, the human review's help."""


def test_every_prompt_file_loads_through_the_loader():
    names = prompt_names()
    assert {name.partition("/")[0] for name in names} == set(FOLDERS)
    assert len(names) == len(list((ROOT / "prompts").rglob("*.md")))
    for name in names:
        if "examples" in name.rpartition("/")[2]:
            assert few_shot(name), name
            continue
        prompt = template(name)
        assert isinstance(prompt, PromptTemplate) and prompt.template_format == "f-string"
        # a single brace left undoubled reads as a placeholder named by the text after it
        assert all(v.isidentifier() for v in prompt.input_variables), (name, prompt.input_variables)
        text = render(name, **{v: f"<{v}>" for v in prompt.input_variables})
        assert text and all(f"<{v}>" in text for v in prompt.input_variables), name


def test_a_missing_value_or_an_unknown_prompt_raises():
    with pytest.raises(KeyError):
        render("qa/cot_task", task="Q")
    with pytest.raises(FileNotFoundError):
        render("qa/no_such_prompt")


def test_braces_in_values_and_doubled_braces_in_templates_come_out_verbatim():
    judge = render("common/judge_system")
    assert '{"correct": true or false' in judge and "{{" not in judge
    code = 'fn f(v: Vec<i32>) -> &str { "a" }'
    assert code in render("programming/feedback_tie", trial=code)


def long_literals(file: Path) -> list[str]:
    """The string literals over LONGEST characters a module holds outside docstrings, raised
    errors and the constants in NOT_PROMPTS (an f-string counts its literal parts)."""
    tree = ast.parse(file.read_text())
    allowed: set[int] = set()
    for node in ast.walk(tree):
        exempt = (
            isinstance(node, ast.Expr | ast.Raise)  # docstrings (of attributes too), raises
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id.endswith(("Error", "Exception"))
            )
            or (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id in NOT_PROMPTS for t in node.targets)
            )
        )
        if exempt:
            allowed.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.JoinedStr):
            allowed.update(id(part) for part in node.values)
            text = "".join(p.value for p in node.values if isinstance(p, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if len(text) > LONGEST:
            found.append(f"{file.name}:{node.lineno}: {text[:60]!r}")
    return found


def test_no_node_or_graph_module_holds_prompt_text():
    files = [f for d in ("nodes", "graphs") for f in sorted((ROOT / d).rglob("*.py"))]
    assert files
    assert [f"{f.parent.name}/{line}" for f in files for line in long_literals(f)] == []


def test_the_scan_finds_prompt_text_in_code(tmp_path):
    module = tmp_path / "node.py"
    sentence = "Now give your final answer as one line, the answer between the brackets: Finish[x]"
    module.write_text(
        f'"""A docstring may be as long as it likes, well over eighty characters in all."""\n'
        f"ASK = {sentence!r}\n"
        f"def node(x):\n    raise ValueError({sentence!r})\n"
        f"def other(x):\n    return f'{{x}} {sentence}'\n"
    )
    assert [line.split(":")[1] for line in long_literals(module)] == ["2", "6"]
