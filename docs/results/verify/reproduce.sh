#!/usr/bin/env bash
# Reproduce the verified-answers results (issue 9): docs/results/verify/{dev,test}/ and their
# analysis. PROTOCOL.md beside this file says what is compared, the splits and the selection rules.
#
#   bash docs/results/verify/reproduce.sh dev      # development runs (calibration and mode choice)
#   bash docs/results/verify/reproduce.sh test     # held-out runs
#   bash docs/results/verify/reproduce.sh report   # calibration table and analysis from the JSONL
#
# The committed held-out lanes test/*-core and test/*-modes were run with the code at commit b5e09b6
# (check it out to rerun them exactly); test/*-main with the shipped code (see PROTOCOL.md).
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
# Every label spells the settings it depends on, so that a rerun means the same whatever the
# defaults are. TODAY is the default before this work: the min trigger, no verification, no loop
# cutting. DEFAULT is what PROTOCOL.md's rule chose on the development runs (now the default).
TODAY=flare:trigger=min,verify=off,repeat_ngram=0
DEFAULT=flare:trigger=support,verify=flag
MIN=flare:trigger=min

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
dev_cal() { ev --dataset $WORLD --limit 40 --method single:verify=flag --method $MIN,verify=flag \
              --method flare:trigger=support,verify=flag --out $OUT/dev/world-flag; }
dev_world_min() { ev --dataset $WORLD --limit 40 --method $MIN,verify=flag --method $MIN,verify=drop \
                    --method $MIN,verify=retry --method $MIN,verify=retry,retry_then=drop --out $OUT/dev/world-min; }
dev_world_sup() { ev --dataset $WORLD --limit 40 --method flare:trigger=support,verify=flag \
                    --method flare:trigger=support,verify=drop --method flare:trigger=support,verify=retry \
                    --method flare:trigger=support,verify=retry,retry_then=drop --out $OUT/dev/world-sup; }
dev_world_today() { ev --dataset $WORLD --limit 40 --method "$TODAY" --out $OUT/dev/world-today; }
dev_asqa_min() { ev --dataset asqa --limit 20 --method $MIN,verify=flag --method $MIN,verify=drop \
                   --method $MIN,verify=retry --method $MIN,verify=retry,retry_then=drop --out $OUT/dev/asqa-min; }
dev_asqa_today() { ev --dataset asqa --limit 20 --method "$TODAY" --out $OUT/dev/asqa-today; }
dev_asqa_sup() { ev --dataset asqa --limit 20 --method flare:trigger=support,verify=flag \
                   --method flare:trigger=support,verify=drop --method flare:trigger=support,verify=retry \
                   --method flare:trigger=support,verify=retry,retry_then=drop --out $OUT/dev/asqa-sup; }

# -- held out ----------------------------------------------------------------------------------------
# Tier 1 (today's default, the new default and the paper's baselines) runs first and ahead of tier 2
# (the trigger and every verify mode on their own).
BASELINES=(--method "$TODAY" --method "$DEFAULT" --method none:verify=off --method single:verify=off)
MODES=(--method flare:trigger=support,verify=off --method $MIN,verify=flag --method $MIN,verify=drop
       --method $MIN,verify=retry --method $MIN,verify=retry,retry_then=drop)
test_world_1() { ev --dataset $WORLD --offset 40 --limit 120 "${BASELINES[@]}" --out $OUT/test/world-core; }
test_asqa_1() { ev --dataset asqa --offset 100 --limit 300 "${BASELINES[@]}" --out $OUT/test/asqa-core; }
test_world_2() { ev --dataset $WORLD --offset 40 --limit 120 "${MODES[@]}" --out $OUT/test/world-modes; }
# The default as shipped (after the post-hoc changes of PROTOCOL.md), on the same questions.
test_world_shipped() { ev --dataset $WORLD --offset 40 --limit 120 --method "$DEFAULT" --out $OUT/test/world-main; }
test_asqa_shipped() { ev --dataset asqa --offset 100 --limit 300 --method "$DEFAULT" --out $OUT/test/asqa-main; }
test_asqa_2() { ev --dataset asqa --offset 100 --limit 300 "${MODES[@]}" --out $OUT/test/asqa-modes; }

# The committed development runs name today's default `flare` (the defaults then: trigger=min,
# verify=off, repeat_ngram=4; every record carries its settings); a rerun of the dev lanes names it
# $TODAY, so after one run the report with TODAY_LABEL="$TODAY".
TODAY_LABEL=${TODAY_LABEL:-flare}

report() {
  "$PY" $OUT/calibrate.py $WORLD $OUT/dev/world-flag/results.jsonl > $OUT/dev/calibration.md
  "$PY" $OUT/choose_default.py --today "$TODAY_LABEL" --world-today $OUT/dev/world-today/results.jsonl \
    --asqa-today $OUT/dev/asqa-today/results.jsonl --world $OUT/dev/world-min/results.jsonl \
    $OUT/dev/world-sup/results.jsonl --asqa $OUT/dev/asqa-min/results.jsonl $OUT/dev/asqa-sup/results.jsonl \
    > $OUT/dev/selection.md
  "$PY" $OUT/analyse.py --reference "$TODAY" --out $OUT/test --checker-run "$DEFAULT" \
    $OUT/test/{world,asqa}-{core,modes}/results.jsonl > /dev/null
  "$PY" $OUT/analyse.py --reference "$TODAY" --out $OUT/test/shipped --checker-run "shipped:$DEFAULT" \
    $OUT/test/{world,asqa}-core/results.jsonl --shipped $OUT/test/{world,asqa}-main/results.jsonl > /dev/null
}

case "${1:-all}" in
  dev) lanes dev_cal dev_world_min dev_world_sup dev_world_today dev_asqa_min dev_asqa_sup dev_asqa_today ;;
  test) lanes test_world_1 test_asqa_1 test_world_2 test_asqa_2 test_world_shipped test_asqa_shipped ;;
  report) report ;;
  all) lanes dev_cal dev_world_min dev_world_sup dev_world_today dev_asqa_min dev_asqa_sup dev_asqa_today
       lanes test_world_1 test_asqa_1 test_world_2 test_asqa_2 test_world_shipped test_asqa_shipped; report ;;
  *) echo "usage: $0 [dev|test|report|all]" >&2; exit 2 ;;
esac
