"""The documentation site as a reader gets it: ``mkdocs build --strict`` (a broken link, anchor
or reference fails it), served on loopback by ``python -m http.server`` and opened in headless
Chromium, which renders the home page, a family page and the configuration page with their
navigation.

Needs the ``docs`` dependency group (part of ``dev``) and Chromium (the Debian package
``chromium``, which ``.ci/run`` installs when it is missing). Without them these tests skip,
except under ``CI=1`` or ``REFLEXION_REQUIRE_DOCS=1``, where they fail. Set
``REFLEXION_DOCS_SCREENSHOTS=DIR`` to keep the screenshots there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexion.core.context import Context
from reflexion.harness.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
PAGES = {
    "index.html": ("Reflexion on LangGraph", "What it buys"),
    "agents/programming.html": ("Programming - Reflexion on LangGraph", "Unit-test evaluator"),
    "reference/configuration.html": ("Configuration - Reflexion on LangGraph", "choices or range"),
}
"""The pages opened: each one's title (its navigation entry and the site's name) and a text
its body must show."""


def required() -> bool:
    return any(os.environ.get(v, "") not in ("", "0") for v in ("CI", "REFLEXION_REQUIRE_DOCS"))


def missing(what: str) -> None:
    if required():
        pytest.fail(f"{what} (CI=1 or REFLEXION_REQUIRE_DOCS=1: the site must be checked)")
    pytest.skip(what)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    missing("no Chromium: apt-get install -y chromium")
    raise AssertionError  # unreachable


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The site, built strictly into a temporary directory, and what the build printed."""
    if importlib.util.find_spec("mkdocs") is None:
        missing("mkdocs is not installed: pip install --group docs")
    site = tmp_path_factory.mktemp("site")
    start = time.monotonic()
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stdout + build.stderr
    print(f"mkdocs build --strict: {time.monotonic() - start:.1f} s")
    return site, build.stdout + build.stderr


@pytest.fixture(scope="module")
def served(built: tuple[Path, str]) -> Iterator[str]:
    """The built site on a free loopback port."""
    site, _ = built
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=site,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "http.server exited"
                assert time.monotonic() < deadline, "http.server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def browse(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with a profile of its own, nothing fetched beyond the page."""
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def png_pixels(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct colours of a screenshot (Pillow comes with
    matplotlib, a runtime dependency)."""
    from PIL import Image

    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        return image.width, image.height, len(colours) if colours is not None else 1 << 16


def test_the_site_builds_strictly_with_every_page(built):
    site, output = built
    assert "WARNING" not in output
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    sources = sorted(
        p.relative_to(ROOT / "docs").with_suffix(".html").as_posix()
        for p in (ROOT / "docs").rglob("*.md")
    )
    assert [p for p in pages if p != "404.html"] == sources
    configuration = (site / "reference/configuration.html").read_text()
    for f in dataclasses.fields(Context):
        assert f"<code>{f.name}</code>" in configuration, f.name
    api = (site / "reference/api.html").read_text()
    for name in (
        "graphs.custom.create_reflexion_graph",
        "core.context.Context",
        "core.context.Context.paper",
        "graphs.loop.build_reflexion_graph",
        "graphs.qa.qa_builder",
        "graphs.qa.react_builder",
        "graphs.programming.programming_builder",
        "graphs.alfworld.alfworld_builder",
    ):
        assert f'id="reflexion.{name}"' in api, name


@pytest.mark.parametrize("page", list(PAGES))
def test_a_browser_renders_the_page_with_its_navigation(page, served, tmp_path):
    title, body = PAGES[page]
    url = f"{served}/{page}"
    dom = browse(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert f"<title>{title}</title>" in html
    assert 'class="md-nav md-nav--primary"' in html, "no navigation"
    for entry in ("Getting started", "Concepts", "Configuration", "Results"):
        assert f"{entry}" in html, entry
    assert body in html

    shot = tmp_path / (page.replace("/", "-").removesuffix(".html") + ".png")
    result = browse(tmp_path, f"--screenshot={shot}", "--window-size=1280,900", url)
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    width, height, colours = png_pixels(shot)
    assert (width, height) == (1280, 900)
    assert colours > 20, "the screenshot is nearly blank"
    if keep := os.environ.get("REFLEXION_DOCS_SCREENSHOTS"):
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
