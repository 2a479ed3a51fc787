"""How hosted and served models are called: the server, the retries, the timeouts.

These settings say how a model is reached, not what the loop does, so they are not context
fields (a graph's form in Studio shows only what its nodes compute with). A model is built
(:func:`nodes.common.resolve_model`) with the process's transport: what
:func:`set_transport` set (the CLI's ``--base-url``), else the environment:

=============================  ================  ==========================================
variable                       default           meaning
=============================  ================  ==========================================
``REFLEXION_BASE_URL``         none              OpenAI-compatible server for ``openai:*``
``REFLEXION_MAX_RETRIES``      3                 tries after a timeout, 429, 5xx or empty reply
``REFLEXION_REQUEST_TIMEOUT``  120               seconds one request may take
``REFLEXION_RETRY_BACKOFF``    1                 seconds before the first retry (doubling)
=============================  ================  ==========================================

An app that needs two transports at once passes its models as objects instead of strings.
The embedded model (``local:``) ignores all of it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import field, fields
from typing import Annotated, Any

from pydantic import Field

from reflexion.core.errors import ContextError
from reflexion.core.schema import settings_class
from reflexion.models.retries import RetryPolicy

ENV_PREFIX = "REFLEXION_"


@settings_class
class Transport:
    """Where and how patiently hosted or served models are called."""

    base_url: str | None = field(
        default=None,
        metadata={"description": "Base URL of an OpenAI-compatible server for openai:* models."},
    )
    max_retries: Annotated[int, Field(ge=0, le=20)] = field(
        default=3,
        metadata={
            "description": "How many times a call that times out, is rate-limited (429), fails "
            "with a server error (5xx) or returns an empty message is tried again, with "
            "exponential backoff; 0 = no retry. When the tries run out the task is recorded "
            "as an error and a benchmark goes on."
        },
    )
    request_timeout: Annotated[float, Field(gt=0)] = field(
        default=120.0,
        metadata={"description": "Seconds one request may take before it counts as timed out."},
    )
    retry_backoff: Annotated[float, Field(ge=0)] = field(
        default=1.0,
        metadata={
            "description": "Seconds to wait before the first retry; the wait doubles on each "
            "later retry (plus random jitter of up to as much), at most 30 s."
        },
    )

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries, timeout=self.request_timeout, backoff=self.retry_backoff
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Transport:
        """The transport the ``REFLEXION_*`` variables describe (unset ones at the default);
        a value that is no number is a one-line error naming the variable."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            try:
                values[f.name] = raw if f.name == "base_url" else type(f.default)(raw)  # type: ignore[misc]
            except ValueError:
                raise ContextError(
                    f"{ENV_PREFIX}{f.name.upper()} is '{raw}': give a number"
                ) from None
        return cls(**values)


_process: Transport | None = None


def set_transport(transport: Transport | None) -> None:
    """Use ``transport`` for every model this process builds from now on (``None``: read the
    environment again)."""
    global _process
    _process = transport


@contextmanager
def using_transport(transport: Transport) -> Iterator[Transport]:
    """:func:`set_transport` for the ``with`` block, then what was set before."""
    global _process
    before = _process
    _process = transport
    try:
        yield transport
    finally:
        _process = before


def current_transport() -> Transport:
    """The process's transport: :func:`set_transport`'s, else the environment's (read once
    per distinct set of ``REFLEXION_*`` values: every model a node resolves asks for it)."""
    if _process is not None:
        return _process
    return _from_env(tuple(os.environ.get(ENV_PREFIX + f.name.upper()) for f in fields(Transport)))


@functools.lru_cache(maxsize=8)
def _from_env(values: tuple[str | None, ...]) -> Transport:
    names = [ENV_PREFIX + f.name.upper() for f in fields(Transport)]
    return Transport.from_env({n: v for n, v in zip(names, values, strict=True) if v is not None})


def transport_of(ctx: object) -> Transport:
    """The transport a run's models use: one a context of an older release still carried
    (its deprecated ``base_url``, ``max_retries``…), else the process's. On a LangGraph server
    that is the server's (its environment): a server drops context keys its graph's schema
    does not list."""
    own = getattr(ctx, "_transport", None)
    return own if isinstance(own, Transport) else current_transport()
