"""Compare two folders written by .ci/slice.sh: every task's trial answers, verdicts, scores,
feedback, final answer and reflections must be the same. Exits 1 and names the tasks that differ."""

import json
import re
import sys
from pathlib import Path


def variant(path: Path) -> str:
    """The run's variant whatever scheme named its file: the part before ``__`` (named by what
    ran), or the stem less its ``-<hash>`` (results format 1)."""
    if "__" in path.stem:
        return path.stem.split("__")[0]
    return re.sub(r"-[0-9a-f]{10}$", "", path.stem)


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
