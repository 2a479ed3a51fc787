"""Compare two folders written by .ci/slice.sh: every task's trial answers, verdicts, scores,
feedback, final answer and reflections must be the same. Exits 1 and names the tasks that differ."""

import json
import re
import sys
from pathlib import Path

OLD_RETRY = {"fresh_once": "informed_once", "fresh": "informed"}
"""The programming labels' retry part before ``retry`` replaced ``code_retry`` (``fresh_once``,
``fresh``; ``repair`` named no part) and what it is named now."""


def variant(path: Path) -> str:
    """The run's variant whatever scheme named its file: the part before ``__`` (named by what
    ran), or the stem less its ``-<hash>`` (results format 1); a programming label of before
    ``retry`` under its name of now (:func:`programming_label`)."""
    if "__" in path.stem:
        name = path.stem.split("__")[0]
    else:
        name = re.sub(r"-[0-9a-f]{10}$", "", path.stem)
    match = re.match(r"(programming-(?:py|rs)-)(reflexion(?:-.*)?)$", name)
    return match[1] + programming_label(match[2]) if match else name


def programming_label(label: str) -> str:
    """A programming reflexion loop's label under the names of now: ``reflexion-fresh_once`` is
    ``reflexion-informed_once``, ``reflexion-fresh`` is ``reflexion-informed``, and a label with
    no retry part (the repair loop, ``code_retry=repair``) is ``reflexion-informed-repair``; the
    other parts (``-notests``, ``-noreflection``, ``-nofixes``…) stay in their place. A label of
    now (one that names ``informed`` or ``informed_once``) is returned as it is."""
    parts = label.split("-")
    if {"informed", "informed_once"} & set(parts):
        return label
    if any(part in OLD_RETRY for part in parts):
        return "-".join(OLD_RETRY.get(part, part) for part in parts)
    # The repair loop: its retry part goes after the options written before it.
    at = 1 + sum(part in ("notests", "noreflection") for part in parts[1:3])
    return "-".join([*parts[:at], "informed", "repair", *parts[at:]])


def finals(folder: str) -> dict[tuple[str, str], object]:
    out: dict[tuple[str, str], object] = {}
    for path in sorted(Path(folder, "runs").glob("*.jsonl")):
        if path.stem.endswith(("-samples", "-problems")) or "-samples__" in path.name:
            continue
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row.get("type") != "final":
                continue
            trials = [
                (
                    e.get("answer"),
                    e.get("success"),
                    round(e.get("score", 0.0), 3),
                    e.get("feedback"),
                )
                for e in row.get("evaluations", [])
            ]
            key = (variant(path), str(row["task_id"]))
            out[key] = (trials, row.get("answer"), row.get("reflections"))
    return out


before, after = finals(sys.argv[1]), finals(sys.argv[2])
differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
print(f"{len(before)} tasks before, {len(after)} after, {len(differ)} differ")
for key in differ:
    print("differs:", *key)
sys.exit(1 if differ or not before else 0)
