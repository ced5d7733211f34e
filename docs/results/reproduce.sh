#!/usr/bin/env bash
# Reproduce the evaluation at scale: every table and plot under docs/results/gemma3-dev100/ and
# docs/results/gemma3-test300/ (see docs/results/README.md for what they show).
#
#   bash docs/results/reproduce.sh            # dev sweep, then held-out runs, then reports
#   bash docs/results/reproduce.sh dev        # only the θ/β sweep on the dev slice
#   bash docs/results/reproduce.sh test       # only the held-out runs
#   bash docs/results/reproduce.sh report     # only rebuild reports and analyses from the JSONL
#
# Everything is resumable: each lane appends finished answers to its own results.jsonl and a rerun
# skips them, so Ctrl-C (or a time limit) loses at most the answers in flight. Two lanes run at
# once, one llama.cpp thread each (on 2 cores, two 1-thread processes beat one 2-thread process);
# set LANES=1 to run them one after the other. Slices: dev = the first 50 questions of each
# dataset (the first 100 are reserved for tuning), held-out = questions 100-399 (StrategyQA: 100-228).
set -euo pipefail
cd "$(dirname "$0")/../.."
FLARE=${FLARE:-.venv/bin/flare}
PY=${PY:-.venv/bin/python}
LANES=${LANES:-2}
DEV=docs/results/gemma3-dev100
TEST=docs/results/gemma3-test300
COMMON=(--model gemma3 --threads 1 --set max_output_tokens=96 --set max_sentences=4 --no-progress)
ALL3=(--dataset 2wikimultihopqa --dataset musique --dataset strategyqa)
# The other methods skip MuSiQue: every method scores EM 0.00-0.03 there (a floor that cannot rank
# methods), and the session's time went further on the two datasets that can. The first ten
# MuSiQue questions of each lane were run before that cut and stay in the results.
TWO=(--dataset 2wikimultihopqa --dataset strategyqa)

# θ sweep (β=0.4, the paper's) and β sweep (θ=0.8, the paper's), FLARE direct, min trigger.
SWEEP=(--method flare:theta=0 --method flare:theta=0.2 --method flare:theta=0.4 --method flare:theta=0.6
       --method flare:theta=0.8 --method flare:theta=1 --method flare:theta=0.8,beta=0
       --method flare:theta=0.8,beta=0.2 --method flare:theta=0.8,beta=0.6)

# Chosen on the dev slice (docs/results/README.md says how): FLARE direct with these settings.
CHOSEN=${CHOSEN:-flare:theta=0.2,beta=0.6}
CORE=(--method none --method single --method "$CHOSEN")
# The other baselines and ablations: explicit queries at the chosen θ; the next sentence, unmasked,
# every sentence (θ=1, β=0: "forward-looking every sentence" and the next-vs-previous ablation);
# previous sentence; previous 16-token window; self-ask decomposition; FLARE instruct; and the
# same θ=1 run keeping the question's documents in every later prompt (M5's "combine" option),
# because the dev traces showed retrieval for the final "So the answer is …" sentence replacing the
# question's documents with unrelated ones and flipping the answer.
OTHERS=(--method "$CHOSEN,query=explicit" --method flare:theta=1,beta=0 --method previous-sentence
        --method previous-window --method decompose --method instruct
        --method flare:theta=1,beta=0,keep_first_docs=true)

ev() { nice -n 5 "$FLARE" eval "$@" "${COMMON[@]}"; }

bg() {  # run a lane in the background when LANES=2, else in the foreground
  if [[ $LANES -ge 2 ]]; then "$@" & else "$@"; fi
}

merge() {  # one results.jsonl and report per stage, from its lanes' files
  local dir=$1
  cat "$dir"/*/results.jsonl > "$dir/results.jsonl"
  "$FLARE" eval --report-only --dataset unused --out "$dir"
}

dev() {
  bg ev "${ALL3[@]}" "${SWEEP[@]}" --offset 0 --limit 25 --out $DEV/part-0
  bg ev "${ALL3[@]}" "${SWEEP[@]}" --offset 25 --limit 25 --out $DEV/part-25
  wait
}

# The held-out questions are split between the lanes: 2Wiki and MuSiQue 100-249 | 250-399,
# StrategyQA 100-164 | 165-228. Core methods first, then the others on the lane's first questions
# (round-robin over questions, so whatever finishes compares every method on the same questions).
lane_a() {
  ev --dataset strategyqa "${CORE[@]}" --offset 100 --limit 65 --out $TEST/lane-a
  ev --dataset 2wikimultihopqa --dataset musique "${CORE[@]}" --offset 100 --limit 150 --out $TEST/lane-a
  ev "${TWO[@]}" "${OTHERS[@]}" --offset 100 --limit 65 --out $TEST/lane-a
}

lane_b() {
  ev --dataset strategyqa "${CORE[@]}" --offset 165 --limit 64 --out $TEST/lane-b
  ev --dataset 2wikimultihopqa --dataset musique "${CORE[@]}" --offset 250 --limit 150 --out $TEST/lane-b
  ev "${TWO[@]}" "${OTHERS[@]}" --offset 165 --limit 64 --out $TEST/lane-b
}

test_runs() {
  bg lane_a
  bg lane_b
  wait
}

report() {  # calibration reads the drafts of the θ=1 run, which drafts every later sentence
  merge $DEV
  $PY docs/results/analyse.py $DEV/results.jsonl > $DEV/analyse.txt
  $PY docs/results/calibration.py $DEV/results.jsonl flare:theta=1 > $DEV/calibration.txt
  merge $TEST
  $PY docs/results/analyse.py $TEST/results.jsonl > $TEST/analyse.txt
  $PY docs/results/calibration.py $TEST/results.jsonl flare:theta=1,beta=0 > $TEST/calibration.txt
}

case "${1:-all}" in
  dev) dev ;;
  test) test_runs ;;
  report) report ;;
  all) dev; test_runs; report ;;
  *) echo "usage: $0 [dev|test|report|all]" >&2; exit 2 ;;
esac
