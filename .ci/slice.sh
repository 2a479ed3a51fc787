#!/usr/bin/env bash
# A seeded slice per task family, for a reshaping that must not move any figure: run it with the
# code before and after, then compare the two folders with .ci/slice_compare.py (every answer,
# verdict and reflection must be identical). One core; about 10 minutes on the default model.
#   .ci/slice.sh PYTHON OUTDIR      (PYTHON: an interpreter that imports the version to check;
#                                    run from outside the repository so it is not shadowed)
set -euo pipefail
py=$1; out=$2
mkdir -p "$out"; cd "$out"
export REFLEXION_THREADS=1
"$py" -m reflexion bench programming --dataset humaneval -n 3 --offset 10 --max-iters 3 --strategy reflexion --db s.sqlite > prog.log 2>&1
"$py" -m reflexion bench programming --dataset humaneval -n 2 --offset 38 --max-iters 3 --strategy reflexion --no-example-tests --db s.sqlite > prog-noex.log 2>&1
"$py" -m reflexion bench hotpotqa --agent cot-gt -n 4 --trials 2 --strategy reflexion --db s.sqlite > qa.log 2>&1
"$py" -m reflexion bench alfworld -n 1 --trials 2 --strategy reflexion --db s.sqlite > alf.log 2>&1
