"""The last release's names keep working for one release, each with a DeprecationWarning
that says what to write instead: the single context's fields, the moved modules and classes."""

from __future__ import annotations

import importlib

import pytest

from reflexion.core.context import Context
from reflexion.core.transport import transport_of
from reflexion.programming.context import CodeContext


def test_a_familys_field_given_to_context_builds_that_familys_context():
    with pytest.warns(DeprecationWarning, match="max_tests .* field of CodeContext"):
        ctx = Context(max_tests=3)
    assert type(ctx) is CodeContext and ctx.max_tests == 3


@pytest.mark.parametrize(("mode", "threshold"), [("score", 0.5), ("binary", None)])
def test_judge_mode_becomes_the_threshold(mode: str, threshold: float | None):
    with pytest.warns(DeprecationWarning, match="judge_mode"):
        assert Context(judge_mode=mode).judge_threshold == threshold
    with pytest.warns(DeprecationWarning, match="judge_mode"):
        assert Context(judge_mode="score", judge_threshold=0.8).judge_threshold == 0.8


def test_the_transport_fields_still_reach_the_models_of_that_context():
    with pytest.warns(DeprecationWarning) as caught:
        ctx = Context(base_url="http://127.0.0.1:9/v1", max_retries=1, request_timeout=2.0)
    assert "REFLEXION_BASE_URL" in " ".join(str(w.message) for w in caught)
    transport = transport_of(ctx)
    assert (transport.base_url, transport.max_retries, transport.request_timeout) == (
        "http://127.0.0.1:9/v1",
        1,
        2.0,
    )
    assert transport_of(Context()).base_url is None  # the process's, untouched


@pytest.mark.parametrize(
    ("module", "name", "home"),
    [
        ("reflexion.graphs.builder", "qa_builder", "reflexion.graphs.qa"),
        ("reflexion.graphs.builder", "programming_builder", "reflexion.graphs.programming"),
        ("reflexion.core.state", "CodeState", "reflexion.programming.state"),
        ("reflexion.core.state", "HouseholdState", "reflexion.alfworld.state"),
        ("reflexion.core.context", "CodeRetry", "reflexion.programming.context"),
        ("reflexion.hotpotqa.metrics", "exact_match", "reflexion.core.answers"),
    ],
)
def test_a_moved_name_imports_from_its_old_module_with_a_warning(module, name, home):
    with pytest.warns(DeprecationWarning, match=f"moved to {home}.{name}"):
        old = getattr(importlib.import_module(module), name)
    assert old is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError):
        importlib.import_module(module).no_such_name  # noqa: B018
