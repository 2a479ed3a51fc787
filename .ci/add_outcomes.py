"""One-off: give every programming trial record in the kept results files its per-test
outcomes (``outcomes``) and the feedback's remarks after the tests (``notes``), read once from
the feedback text those records were written with. Every record is checked: the feedback
rendered from what was read must be the recorded feedback, byte for byte, or nothing is
written. Deleted once run (the evaluator writes both keys itself since this commit)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reflexion.nodes.coder.feedback import DOUBTED, FAILED, NONE, PASSED, UNBACKED, render_outcomes

HEADS = {PASSED: "passed", FAILED: "failed", DOUBTED: "doubted", UNBACKED: "unbacked"}


def read_record(record: dict, tests: list[str], language: str) -> dict | None:
    feedback = record.get("feedback") or ""
    if not feedback.startswith(PASSED + "\n"):
        return None
    comment = " # " if language == "py" else " // "
    known = sorted(set(tests), key=len, reverse=True)
    found: dict[str, dict] = {}
    blocks = feedback.split("\n\n")
    used = 0
    for block in blocks:
        head, *lines = block.split("\n")
        if head not in HEADS:
            break
        used += 1
        kind = HEADS[head]
        for line in lines:
            if line == NONE:
                continue
            test = next((t for t in known if line == t or line.startswith(t + comment)), None)
            if test is None:
                raise ValueError(f"unknown line {line!r}")
            detail = line[len(test) + len(comment) :] if line != test else ""
            if kind == "passed":
                found[test] = {"test": test, "passed": True, "detail": "", "standing": "counted"}
            elif kind == "failed":
                found[test] = {
                    "test": test,
                    "passed": False,
                    "detail": detail,
                    "standing": "counted",
                }
            elif kind == "doubted":
                prior = found.get(test, {"passed": False, "detail": ""})
                found[test] = {**prior, "test": test, "standing": "doubted"}
            else:
                if test in found and found[test]["standing"] == "doubted":
                    continue
                prior = found.get(test, {"passed": False})
                found[test] = {**prior, "test": test, "detail": detail, "standing": "unbacked"}
    outcomes = [found[t] for t in dict.fromkeys(tests) if t in found]
    notes = blocks[used:]
    return {"outcomes": outcomes, "notes": notes}


def migrate(path: Path) -> tuple[int, int]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    rows = [json.loads(line) for line in lines]
    tests = {
        r.get("thread_id"): list(r.get("tests") or []) for r in rows if r.get("type") == "final"
    }
    language = next(
        (str((r.get("settings") or {}).get("language") or "py") for r in rows if r.get("settings")),
        "py",
    )
    done = skipped = 0

    def fix(record: dict, thread: object) -> None:
        nonlocal done, skipped
        if "outcomes" in record or thread not in tests:
            skipped += "Tests passed:" in (record.get("feedback") or "")
            return
        read = read_record(record, tests[thread], language)
        if read is None:
            return
        text = "\n\n".join([render_outcomes(read["outcomes"], language), *read["notes"]])
        if text != record["feedback"]:
            raise ValueError(f"{path}: {thread} trial {record.get('trial')} does not render back")
        record["outcomes"] = read["outcomes"]
        if read["notes"]:
            record["notes"] = read["notes"]
        done += 1

    for row in rows:
        if row.get("type") == "final":
            for record in row.get("evaluations") or []:
                fix(record, row.get("thread_id"))
        elif row.get("type") == "trial":
            fix(row, row.get("thread_id"))
    # A row left as it was keeps its original text (older rows were not all written alike).
    out = []
    for line, row in zip(lines, rows, strict=True):
        touched = "outcomes" in row or any("outcomes" in e for e in row.get("evaluations") or [])
        out.append(json.dumps(row, ensure_ascii=False) if touched else line)
    path.write_text("".join(o + "\n" for o in out))
    return done, skipped


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name, *migrate(Path(name)))
