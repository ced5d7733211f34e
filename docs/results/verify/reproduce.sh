#!/usr/bin/env bash
# Reproduce the verified-answers results (issue 9): docs/results/verify/{dev,test}/ and their
# analysis. PROTOCOL.md beside this file says what is compared, the splits and the selection rules.
#
#   bash docs/results/verify/reproduce.sh dev      # development runs (calibration and mode choice)
#   bash docs/results/verify/reproduce.sh test     # held-out runs
#   bash docs/results/verify/reproduce.sh report   # calibration table and analysis from the JSONL
#
# Resumable: every lane appends finished answers to its own results.jsonl and a rerun skips them.
# Lanes run two at a time (one llama.cpp thread each); LANES=1 runs them one after the other.
set -euo pipefail
cd "$(dirname "$0")/../../.."
FLARE=${FLARE:-.venv/bin/flare}
PY=${PY:-.venv/bin/python}
LANES=${LANES:-2}
OUT=docs/results/verify
WORLD=docs/results/world/data/world
COMMON=(--model gemma3 --threads 1 --set max_sentences=6 --no-progress)
TODAY=flare:repeat_ngram=0  # the default before this work: no verification, no loop cutting
DEFAULT=${DEFAULT:-flare:trigger=support,verify=retry}  # chosen on dev by PROTOCOL.md's rule

ev() { nice -n 5 "$FLARE" eval "$@" "${COMMON[@]}"; }
lanes() {  # run the given lane functions, two at a time when LANES=2
  local pids=()
  for lane in "$@"; do
    if [[ $LANES -ge 2 ]]; then "$lane" & pids+=($!); else "$lane"; fi
    if [[ ${#pids[@]} -ge $LANES ]]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  wait
}

# -- development: checker calibration (verify=flag) and the candidate modes ------------------------
dev_cal() { ev --dataset $WORLD --limit 40 --method single:verify=flag --method flare:verify=flag \
              --method flare:trigger=support,verify=flag --out $OUT/dev/world-flag; }
dev_world() { ev --dataset $WORLD --limit 40 --method flare --method flare:verify=drop \
                --method flare:verify=retry,retry_then=drop --method flare:trigger=support,verify=drop \
                --method flare:trigger=support,verify=retry,retry_then=drop --method flare:verify=retry \
                --method flare:trigger=support,verify=retry --out $OUT/dev/world-modes; }
dev_asqa() { ev --dataset asqa --limit 20 --method flare --method single --method flare:verify=drop \
               --method flare:verify=retry,retry_then=drop --method flare:trigger=support,verify=drop \
               --method flare:trigger=support,verify=retry,retry_then=drop --method flare:verify=retry \
               --method flare:trigger=support,verify=retry --out $OUT/dev/asqa-modes; }

# -- held out ----------------------------------------------------------------------------------------
# Tier 1 (the comparison the issue asks for) first, then the baselines and every mode.
test_world_1() { ev --dataset $WORLD --offset 40 --limit 120 --method "$TODAY" --method "$DEFAULT" \
                   --method none --method single --out $OUT/test/world-core; }
test_asqa_1() { ev --dataset asqa --offset 100 --limit 300 --method "$TODAY" --method "$DEFAULT" \
                  --method none --method single --out $OUT/test/asqa-core; }
test_world_2() { ev --dataset $WORLD --offset 40 --limit 120 --method flare:trigger=support \
                   --method flare:verify=flag --method flare:verify=drop --method flare:verify=retry \
                   --method flare:verify=retry,retry_then=drop --out $OUT/test/world-modes; }
test_asqa_2() { ev --dataset asqa --offset 100 --limit 300 --method flare:trigger=support \
                  --method flare:verify=flag --method flare:verify=drop --method flare:verify=retry \
                  --method flare:verify=retry,retry_then=drop --out $OUT/test/asqa-modes; }

report() {
  "$PY" $OUT/calibrate.py $WORLD $OUT/dev/world-flag/results.jsonl > $OUT/dev/calibration.md
  "$PY" $OUT/calibrate.py $WORLD $OUT/test/world-modes/results.jsonl \
    --thresholds supported=0.9,unsupported=0.34,lift=2 > $OUT/test/checker.md || true
  "$PY" $OUT/analyse.py --reference flare --out $OUT/dev $OUT/dev/*/results.jsonl > /dev/null
  "$PY" $OUT/analyse.py --reference "$TODAY" --out $OUT/test $OUT/test/*/results.jsonl > /dev/null
}

case "${1:-all}" in
  dev) lanes dev_cal dev_world dev_asqa ;;
  test) lanes test_world_1 test_asqa_1 test_world_2 test_asqa_2 ;;
  report) report ;;
  all) lanes dev_cal dev_world dev_asqa; lanes test_world_1 test_asqa_1 test_world_2 test_asqa_2; report ;;
  *) echo "usage: $0 [dev|test|report|all]" >&2; exit 2 ;;
esac
