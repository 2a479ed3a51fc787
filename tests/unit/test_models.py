"""Model strings: presets, missing packages and keys give one-line, actionable errors."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from reflexion.core.errors import ModelError
from reflexion.models import providers as models


def test_missing_weight_package_names_the_extra(monkeypatch):
    fake = models.Preset(
        name="ghost-1b",
        description="not installed",
        parts=(("no-such-weights-dist-xyz", "x/part01.bin"),),
        sha256="0" * 64,
        size=1,
        extra="ghost",
    )
    monkeypatch.setitem(models.PRESETS, "ghost-1b", fake)
    with pytest.raises(
        ModelError, match=r"needs the package 'no-such-weights-dist-xyz'.*\[ghost\]"
    ) as caught:
        models.load_chat_model("local:ghost-1b")
    # one line, naming the other fix too: another model (a server's operator sets it)
    text = str(caught.value)
    assert "\n" not in text and models.MODEL_VARIABLE in text and "actor_model" in text


def test_corrupt_assembled_file_is_rejected(monkeypatch, tmp_path):
    part = tmp_path / "weights.gguf"
    part.write_bytes(b"not a model")
    fake = models.Preset(
        name="corrupt", description="", parts=(("d", "p"),), sha256="0" * 64, size=0, extra="local"
    )
    monkeypatch.setitem(models.PRESETS, "corrupt", fake)
    monkeypatch.setattr(models, "_part_path", lambda dist, rel, preset: part)
    monkeypatch.setenv("REFLEXION_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ModelError, match="SHA-256"):
        models.resolve_preset("corrupt")


def test_a_cache_folder_that_cannot_be_written_is_one_line(monkeypatch, tmp_path):
    """Assembling a model in a cache that is not a writable folder names it and the fix."""
    part = tmp_path / "weights.part"
    part.write_bytes(b"half a model")
    fake = models.Preset(
        name="split",
        description="",
        parts=(("d", "p"), ("d", "q")),
        sha256="0" * 64,
        size=24,
        extra="local",
    )
    monkeypatch.setitem(models.PRESETS, "split", fake)
    monkeypatch.setattr(models, "_part_path", lambda dist, rel, preset: part)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("REFLEXION_CACHE_DIR", str(blocked))
    with pytest.raises(ModelError, match=r"cannot assemble .*'split'.*REFLEXION_CACHE_DIR"):
        models.resolve_preset("split")


@pytest.mark.parametrize("spec", ["gpt-4o", ":x", "openai:", "  "])
def test_strings_without_provider(spec):
    with pytest.raises(ModelError, match="provider:model"):
        models.load_chat_model(spec)


def test_base_url_only_for_openai():
    with pytest.raises(ModelError, match="openai provider"):
        models.load_chat_model("anthropic:claude", base_url="http://127.0.0.1:1/v1")


def test_openai_compatible_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat = models.load_chat_model("openai:local-model", base_url="http://127.0.0.1:9/v1")
    assert chat.__class__.__name__ == "ChatOpenAI"


class _Recorder(BaseHTTPRequestHandler):
    """Answers every chat completion and keeps each request's body on the server."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        from reflexion.harness.perf.concurrency import chat_completion

        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        data = json.dumps(
            chat_completion(
                "ok", model="m", prompt_tokens=3, completion_tokens=1, completion_id="c"
            )
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_served_model_gets_the_reply_cap_under_both_names():
    """ChatOpenAI names the cap max_completion_tokens, which llama-cpp-python's server ignores
    (it then writes to the end of its context): the request carries max_tokens too."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        chat = models.load_chat_model("openai:served-cap", max_tokens=48, base_url=url)
        assert chat.invoke("hi").content == "ok"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()
    [body] = server.bodies  # type: ignore[attr-defined]
    assert body["max_tokens"] == 48
    assert body["max_completion_tokens"] == 48


def test_unknown_gguf_path():
    with pytest.raises(ModelError, match="unknown embedded model"):
        models.load_chat_model("local:/nonexistent/model.gguf")


def test_a_corrupt_gguf_file_is_a_one_line_model_error(tmp_path):
    """llama.cpp's own ValueError (and its traceback) never reaches the user."""
    pytest.importorskip("llama_cpp", reason="needs the local extra (llama-cpp-python)")
    from reflexion.core.errors import ModelError
    from reflexion.models.providers import embedded_model

    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with pytest.raises(ModelError, match=r"cannot load the GGUF model .*truncated\.gguf"):
        embedded_model(str(bad))


def test_every_cache_sits_under_one_root(monkeypatch, tmp_path):
    """Models, the offline corpus and the unpacked ALFWorld games share one root:
    ``REFLEXION_CACHE_DIR``, else ``XDG_CACHE_HOME/reflexion``, else ``~/.cache/reflexion``."""
    from reflexion.core.data import cache_root

    monkeypatch.delenv("REFLEXION_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root("alfworld") == tmp_path / "home" / ".cache" / "reflexion" / "alfworld"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "reflexion" / "models"
    monkeypatch.setenv("REFLEXION_CACHE_DIR", str(tmp_path / "own"))
    assert cache_root("corpus") == tmp_path / "own" / "corpus"
    assert models.cache_dir() == tmp_path / "own" / "models"
