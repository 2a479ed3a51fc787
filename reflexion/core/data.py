"""Files shipped with the package, the cache that unpacked copies go to, and the JSONL reader
every dataset loader uses."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from reflexion.core.errors import DatasetError


def bundled(name: str) -> Path:
    """Path of a dataset shipped with the package (``reflexion/data/<name>``)."""
    return Path(str(resources.files("reflexion").joinpath("data", name)))


def cache_root(sub: str) -> Path:
    """Where the package keeps ``sub`` (``models``, ``corpus``, ``alfworld``): under
    ``$REFLEXION_CACHE_DIR``, else ``$XDG_CACHE_HOME/reflexion``, else ``~/.cache/reflexion``.
    Nothing is created."""
    root = os.environ.get("REFLEXION_CACHE_DIR")
    if not root:
        root = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reflexion")
    return Path(root) / sub


def iter_jsonl(file: Path) -> Iterator[tuple[str, object]]:
    """``(where, object)`` for each non-blank line of a JSONL file (gzipped when it ends in
    ``.gz``); ``where`` is ``file:line``. A missing, unreadable or malformed file raises
    :class:`DatasetError` naming the line and the fix."""
    if file.is_dir():
        raise DatasetError(f"{file} is a directory: give the path of a JSONL file to --dataset")
    if not file.is_file():
        raise DatasetError(f"dataset file {file} does not exist: check the path given to --dataset")
    opener = gzip.open if file.suffix == ".gz" else open
    try:
        with opener(file, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = f"{file}:{number}"
                try:
                    yield where, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"{where}: not valid JSON ({exc.msg}); each line must be one JSON object"
                    ) from None
    except (OSError, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DatasetError(
            f"cannot read dataset {file}: {reason}; check its permissions, or copy it to a "
            "readable place"
        ) from None
    except UnicodeDecodeError:
        raise DatasetError(f"dataset {file} is not UTF-8 text: give a JSONL file") from None
