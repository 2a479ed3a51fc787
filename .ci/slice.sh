#!/usr/bin/env bash
# A seeded slice per task family, for a reshaping that must not move any figure: run it with the
# code before and after, then compare the two folders with .ci/slice_compare.py (every answer,
# verdict and reflection must be identical). One core; about 15 minutes on the default model.
#   .ci/slice.sh PYTHON OUTDIR [FAMILY...]
#     PYTHON: an interpreter that imports the version to check (run from outside the
#             repository so it is not shadowed)
#     FAMILY: programming, rust, hotpotqa, alfworld (default: all four)
set -euo pipefail
py=$1; out=$2; shift 2
families=${*:-programming rust hotpotqa alfworld}
mkdir -p "$out"; cd "$out"
export REFLEXION_THREADS=1
# the command line is reflexion.harness (reflexion before the runtime/harness split)
cli=$("$py" -c "import importlib.util as u; print('reflexion.harness' if u.find_spec('reflexion.harness') else 'reflexion')")
# bench programming's loops are --loop (--strategy before the option was renamed)
help=$(COLUMNS=200 "$py" -m $cli bench programming --help 2>/dev/null || true)
case $help in *--loop*) loop=--loop ;; *) loop=--strategy ;; esac
for family in $families; do
    case $family in
    programming)
        "$py" -m $cli bench programming --dataset humaneval -n 3 --offset 10 --max-iters 3 $loop reflexion --db s.sqlite > prog.log 2>&1
        "$py" -m $cli bench programming --dataset humaneval -n 2 --offset 38 --max-iters 3 $loop reflexion --no-example-tests --db s.sqlite > prog-noex.log 2>&1 ;;
    rust)  # compile errors, rustc's fixes, model-written tests checked by rustc, hidden tests
        "$py" -m $cli bench programming --dataset humaneval-rs -n 4 --offset 10 --max-iters 3 $loop reflexion --db s.sqlite > rust.log 2>&1
        "$py" -m $cli bench programming --dataset humaneval-rs -n 2 --offset 26 --max-iters 3 $loop reflexion --no-example-tests --db s.sqlite > rust-noex.log 2>&1 ;;
    hotpotqa)
        "$py" -m $cli bench hotpotqa --agent cot-gt -n 4 --trials 2 --strategy reflexion --db s.sqlite > qa.log 2>&1 ;;
    alfworld)
        "$py" -m $cli bench alfworld -n 1 --trials 2 --strategy reflexion --db s.sqlite > alf.log 2>&1 ;;
    *) echo "unknown family: $family (programming, rust, hotpotqa, alfworld)" >&2; exit 2 ;;
    esac
done
