"""How hosted models are reached: the environment, --base-url (the process), a run's config
(a server run of ``bench --server --base-url``), never a context field."""

from __future__ import annotations

import pytest

from reflexion.core.context import Context
from reflexion.core.errors import ContextError
from reflexion.models.transport import (
    Transport,
    current_transport,
    set_transport,
    transport_of,
    using_transport,
)


def test_the_environment_sets_it_and_a_bad_number_is_one_line():
    env = {"REFLEXION_MAX_RETRIES": "5", "REFLEXION_REQUEST_TIMEOUT": "2.5"}
    assert Transport.from_env(env) == Transport(max_retries=5, request_timeout=2.5)
    assert Transport.from_env({}) == Transport()
    with pytest.raises(ContextError, match=r"^REFLEXION_MAX_RETRIES is 'many': give a number$"):
        Transport.from_env({"REFLEXION_MAX_RETRIES": "many"})
    with pytest.raises(ContextError, match=r"^max_retries is 30: use a value in \[0, 20\]$"):
        Transport.from_env({"REFLEXION_MAX_RETRIES": "30"})


def test_the_process_transport_and_a_with_block(monkeypatch):
    monkeypatch.setenv("REFLEXION_BASE_URL", "http://env:1/v1")
    assert current_transport().base_url == "http://env:1/v1"
    with using_transport(Transport(base_url="http://block:2/v1")):
        assert transport_of(Context()).base_url == "http://block:2/v1"
    set_transport(Transport(base_url="http://cli:3/v1"))
    assert current_transport().base_url == "http://cli:3/v1"
    set_transport(None)
    assert current_transport().base_url == "http://env:1/v1"
