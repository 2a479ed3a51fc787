"""A llama.cpp context whose answer to a prompt does not depend on what it computed before.

llama-cpp-python reuses the longest prefix of the new prompt that the context evaluated last
and evaluates the rest in batches of ``n_batch`` tokens from wherever that prefix ends. The
sums llama.cpp does for a token depend on the batch the token is evaluated in, so the same
prompt with the same seed can draw different text after different histories: a retry sent
right after its own trial 1 (one token re-evaluated) and the same retry sent after another
question (most of the prompt evaluated) gave the same answer in only 22 of 82 paired draws
(HotPotQA CoT, 1.5B). That broke the pairing that compares strategies by memory alone; with
this context the rerun matched in 79 of 79.

:class:`AlignedLlama` keeps the cache but makes its use canonical: evaluation always restarts
at a multiple of ``n_batch``, and only whole batches that were themselves evaluated that way
are reused. Every token of a prompt is then computed in the same batch, with the same
neighbours, whatever ran before, so a prompt and a seed give one answer. The price is that up
to ``n_batch - 1`` cached tokens are evaluated again per call, so the contexts use a small
batch (:data:`BATCH`).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from llama_cpp import Llama

BATCH = 64
"""Prompt batch size of the embedded contexts. A call re-evaluates 32 cached tokens on average
instead of 256 at llama-cpp-python's 512, and prompt processing is no slower: a 1,143-token
prompt from an empty cache, one thread, took 10.3 s at both sizes on the 0.5B model and 21.2 s
against 20.9 s on the 1.5B (medians of 3)."""


class AlignedLlama(Llama):
    """``Llama`` with batch-aligned prefix reuse (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._aligned = 0  # tokens below this were evaluated in whole, aligned batches
        self._prompt_pending = False
        super().__init__(*args, **kwargs)

    def generate(
        self, tokens: Sequence[int], *args: Any, **kwargs: Any
    ) -> Generator[int, Sequence[int] | None, None]:
        # Offer llama-cpp-python only the canonically computed part of the cache to match
        # against, and make it evaluate at least the prompt's last token (never sample from
        # logits left by an earlier call).
        self.n_tokens = min(self.n_tokens, self._aligned)
        self._requires_eval = True
        self._prompt_pending = True
        return super().generate(tokens, *args, **kwargs)

    def eval(self, tokens: Sequence[int]) -> None:
        if not self._prompt_pending:  # a sampled token: evaluated one at a time, as always
            super().eval(tokens)
            return
        self._prompt_pending = False
        start = self.n_tokens
        base = start - start % self.n_batch
        if base < start:  # step back to the batch boundary and evaluate from there
            tokens = [*self.input_ids[base:start].tolist(), *tokens]
            self.n_tokens = base
        super().eval(tokens)
        self._aligned = base + len(tokens) // self.n_batch * self.n_batch

    def reset(self) -> None:
        super().reset()  # type: ignore[no-untyped-call]
        self._aligned = 0
