#!/usr/bin/env bash
# Reproduce the Qwen results (issue 16): docs/results/qwen/{dev,test}/. PROTOCOL.md beside this
# file says what is compared, the splits and the selection rules.
#
#   bash docs/results/qwen/reproduce.sh dev       # development runs (control tokens, queries)
#   bash docs/results/qwen/reproduce.sh test      # held-out lanes, in the protocol's order
#   bash docs/results/qwen/reproduce.sh report    # every report.md from the JSONL
#
# Resumable: every lane appends finished answers to its own results.jsonl and a rerun skips them.
# Lanes run two at a time (one llama.cpp thread each); LANES=1 runs them one after the other.
set -euo pipefail
cd "$(dirname "$0")/../../.."
FLARE=${FLARE:-.venv/bin/flare}
LANES=${LANES:-2}
OUT=docs/results/qwen
WORLD=docs/results/world/data/world
MODEL=(--model qwen1.5b --threads 1 --no-progress)
LONG=(--set max_sentences=6)
QA=(--set max_output_tokens=96 --set max_sentences=4)
# Every label spells the settings it depends on, so a rerun means the same whatever the defaults.
DEFAULT=flare:trigger=support,verify=flag
PAPER=flare:trigger=min,verify=off
CORE=(--method single --method "$DEFAULT" --method "$PAPER" --method none)

ev() { "$FLARE" eval "$@" "${MODEL[@]}"; }
lanes() {  # run the given lane functions, two at a time when LANES=2
  local pids=()
  for lane in "$@"; do
    if [[ $LANES -ge 2 ]]; then "$lane" & pids+=($!); else "$lane"; fi
    if [[ ${#pids[@]} -ge $LANES ]]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  wait
}

# -- development ---------------------------------------------------------------------------------
dev_ctl_on() { ev --dataset $WORLD --limit 20 --method single --method flare "${LONG[@]}" --special-tokens \
                 --out $OUT/dev/world-ctl-on; }
dev_ctl_off() { ev --dataset $WORLD --limit 20 --method single --method flare "${LONG[@]}" --no-special-tokens \
                  --out $OUT/dev/world-ctl-off; }
dev_query() { ev --dataset $WORLD --limit 20 --method "$DEFAULT" "${LONG[@]}" --out $OUT/dev/world-query; }

# -- held out ------------------------------------------------------------------------------------
test_world() { ev --dataset $WORLD --offset 40 --limit 120 "${CORE[@]}" "${LONG[@]}" --out $OUT/test/world; }
test_2wiki() { ev --dataset 2wikimultihopqa --offset 100 --limit 100 "${CORE[@]}" "${QA[@]}" --out $OUT/test/2wiki; }
test_zh() { ev --dataset benchmarks/qinglan-zh --split test --method single --method "$DEFAULT" --method none \
              --out $OUT/test/zh; }
test_asqa() { ev --dataset asqa --offset 100 --limit 100 "${CORE[@]}" "${LONG[@]}" --out $OUT/test/asqa; }
test_musique() { ev --dataset musique --offset 100 --limit 100 "${CORE[@]}" "${QA[@]}" --out $OUT/test/musique; }
test_hotpot() { ev --dataset hotpotqa --offset 100 --limit 100 "${CORE[@]}" "${QA[@]}" --out $OUT/test/hotpotqa; }

report() {
  for dir in $OUT/dev/* $OUT/test/*; do
    [[ -f $dir/results.jsonl ]] && "$FLARE" eval --report-only --dataset unused --out "$dir"
  done
}

case "${1:-all}" in
  dev) lanes dev_ctl_on dev_ctl_off dev_query ;;
  test) lanes test_world test_2wiki test_zh test_asqa test_musique test_hotpot ;;
  report) report ;;
  all) lanes dev_ctl_on dev_ctl_off dev_query; lanes test_world test_2wiki test_zh test_asqa test_musique test_hotpot; report ;;
  *) echo "usage: $0 [dev|test|report|all]" >&2; exit 2 ;;
esac
