"""One-off: bring the kept results files (runs/measured/) from results format 1 to the named
scheme of reflexion.harness.bench.naming, and the pages that quote them along.

For each file with final lines: its settings (format 1's flat shape: every graph's fields, the
judge as judge_mode, the lesson settings flat) become the run's own settings in today's shape
(built into its graph's context, fields it does not record at the reference behaviour, and
named again by result_settings); every line's thread id gets the new key; a file named by a
format-1 hash is renamed to its run's name. Prints the renames; fails on a name collision.

    python .ci/rename_results.py          # dry run
    python .ci/rename_results.py --apply

Deleted after it ran once (see the commit that removes it).
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any

from reflexion.alfworld.context import HouseholdContext
from reflexion.core.context import Context, context_from
from reflexion.harness.bench.naming import REFERENCE, run_name, thread_key
from reflexion.harness.bench.settings import result_settings
from reflexion.hotpotqa.context import QAContext, ReActContext
from reflexion.programming.context import CodeContext

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "runs" / "measured"
HASHED = re.compile(r"^(?P<stem>.+)-(?P<key>[0-9a-f]{10})\.jsonl$")
BENCH_KEYS = (
    "bench",
    "agent",
    "strategy_name",
    "dataset",
    "language",
    "games_source",
    "paired",
    "reflector_sees_context",
)
FAMILY = {"programming": "programming", "hotpotqa": "hotpotqa", "alfworld": "alfworld"}


def graph_of(old: dict[str, Any]) -> type[Context]:
    if old["bench"] == "hotpotqa":
        return ReActContext if old.get("agent") == "react" else QAContext
    return CodeContext if old["bench"] == "programming" else HouseholdContext


def converted(old: dict[str, Any]) -> dict[str, Any]:
    """Format 1's settings as today's: the run's own settings, named again."""
    cls = graph_of(old)
    own = {f.name for f in fields(cls)}
    values = {k: v for k, v in old.items() if k in own and k not in ("lessons", "judge_threshold")}
    if old.get("judge_mode", "binary") == "score":
        values["judge_threshold"] = old.get("judge_threshold", 0.5)
    elif "judge_mode" not in old and "judge_threshold" in old:
        values["judge_threshold"] = old["judge_threshold"]
    if old.get("lessons") is True:
        values["lessons"] = {
            "enabled": True,
            "recall_k": old.get("recall_k", 3),
            "filter": old.get("lesson_filter", "validated"),
            "family": old.get("task_family"),
        }
    for name in own - set(values) - {"lessons", "judge_threshold"}:  # ran before it existed
        if name in REFERENCE:
            values[name] = REFERENCE[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctx = context_from(values, cls)
    settings = {k: old[k] for k in BENCH_KEYS if k in old}
    settings.update(result_settings(ctx))
    if old.get("base_url"):
        settings["base_url"] = old["base_url"]
    return settings


def stem_of(path: Path, settings: dict[str, Any]) -> str:
    hashed = HASHED.match(path.name)
    if hashed:
        return hashed.group("stem")
    if settings["bench"] == "programming":
        return f"programming-{settings['language']}-{settings['strategy_name']}"
    if settings["bench"] == "hotpotqa":
        return f"hotpotqa-{settings['agent']}-{settings.get('strategy_name', settings['strategy'])}"
    return f"alfworld-{settings['evaluator']}-{settings['strategy']}"


def main(apply: bool) -> None:
    renames: dict[Path, Path] = {}
    for path in sorted(MEASURED.rglob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        finals = [r for r in rows if r.get("type") == "final" and r.get("settings")]
        if not finals:
            continue
        olds = {json.dumps(r["settings"], sort_keys=True) for r in finals}
        if len(olds) != 1:
            sys.exit(f"{path}: {len(olds)} different settings")
        settings = converted(finals[0]["settings"])
        stem = stem_of(path, settings)
        name = run_name(stem, settings)
        key = thread_key(name)
        family = FAMILY[settings["bench"]]
        target = path.with_name(f"{name}.jsonl") if HASHED.match(path.name) else path
        if target in renames.values():
            sys.exit(f"{path} and another file would both be {target.name}")
        renames[path] = target
        out = []
        for row in rows:
            thread = row.get("thread_id")
            if isinstance(thread, str) and thread.startswith(f"{family}-"):
                task = thread.split("-", 2)[2] if thread.count("-") >= 2 else thread
                row["thread_id"] = f"{family}-{key}-{task}"
            if row.get("type") == "final":
                row["settings"] = settings
                row.pop("results_format", None)
            out.append(json.dumps(row))
        print(f"{path.relative_to(ROOT)} -> {target.name}")
        if apply:
            path.write_text("\n".join(out) + "\n")
            if target != path:
                path.rename(target)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    moved = {
        str(old.relative_to(ROOT)): str(new.relative_to(ROOT))
        for old, new in renames.items()
        if old != new
    }
    for page in pages:
        text = page.read_text()
        changed = text
        for old, new in moved.items():
            changed = changed.replace(old, new)
            changed = changed.replace(Path(old).name, Path(new).name)
        if changed != text:
            print(f"rewrote {page.relative_to(ROOT)}")
            if apply:
                page.write_text(changed)


if __name__ == "__main__":
    main("--apply" in sys.argv[1:])
