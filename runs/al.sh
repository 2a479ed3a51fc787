#!/bin/bash
# Rerun after trial 1 with the aligned cache: $1 source db, $2 new db, $3 agent, $4 model, $5.. keys to drop
src=$1; db=$2; agent=$3; model=$4; shift 4
. .venv/bin/activate
export REFLEXION_THREADS=1
[ -f "$db" ] || { python - "$src" "$db" "$@" <<'PY'
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(sys.argv[2])
sqlite3.connect(sys.argv[1]).backup(conn)  # a copy that includes pages still in the WAL
saver = SqliteSaver(conn)
for key in sys.argv[3:]:
    ids = [r[0] for r in conn.execute("select distinct thread_id from checkpoints where thread_id like ?", (f"hotpotqa-{key}-%",))]
    for t in ids: saver.delete_thread(t)
    print(key, "deleted", len(ids), "threads")
conn.commit()
PY
}
name=$(basename "$db" .sqlite)
for s in none reflexion; do
  reflexion bench hotpotqa --agent $agent -n 100 --trials 2 --model $model --db $db --strategy $s --output runs/al/$name-$s.jsonl
done
