#!/usr/bin/env bash
# Reproduce the Qwen results (issue 16): docs/results/qwen/{dev,test}/. PROTOCOL.md beside this
# file says what is compared, the splits and the selection rules.
#
#   bash docs/results/qwen/reproduce.sh dev       # development runs (control tokens, queries)
#   bash docs/results/qwen/reproduce.sh test      # held-out lanes, in the protocol's order
#   bash docs/results/qwen/reproduce.sh dev2      # round 2: development (first sentence checked, hops)
#   bash docs/results/qwen/reproduce.sh test2     # round 2: held-out lanes
#   bash docs/results/qwen/reproduce.sh dev3      # round 3: development (new_docs, follow_names)
#   bash docs/results/qwen/reproduce.sh test3     # round 3: held-out lanes
#   bash docs/results/qwen/reproduce.sh dev4      # round 4: development (at 0e21d44: the name filter)
#   bash docs/results/qwen/reproduce.sh test4     # round 4: held-out lanes (2Wiki 300-399, a second world)
#   bash docs/results/qwen/reproduce.sh dev5      # round 5: development (fair timing, follow_k, cited passages)
#   bash docs/results/qwen/reproduce.sh test5     # round 5: held-out lanes
#   bash docs/results/qwen/reproduce.sh test5more # round 5's lanes completed, and 2WikiMultihopQA 500-599
#   bash docs/results/qwen/reproduce.sh test5world # the seed-1 world's long form 100-159, paragraph exemplars
#   bash docs/results/qwen/reproduce.sh dev6      # round 6: development (draft before following, trimmed passages)
#   bash docs/results/qwen/reproduce.sh test6     # round 6: held-out lanes
#   bash docs/results/qwen/reproduce.sh dev7      # round 7: development (cache shifted past insertions, follow_k=2)
#   bash docs/results/qwen/reproduce.sh dev7u     # round 7: the chosen lane again, insertions undone
#   bash docs/results/qwen/reproduce.sh test7     # round 7: held-out lanes for the chosen default
#   bash docs/results/qwen/reproduce.sh test7more # round 7: the Chinese test set and ASQA 300-349
#   bash docs/results/qwen/reproduce.sh dev8      # round 8: development (found passages far below the best unread)
#   bash docs/results/qwen/reproduce.sh test8     # round 8: held-out lanes for the chosen default
#   bash docs/results/qwen/reproduce.sh dev9      # round 9: development (names already read not followed further)
#   bash docs/results/qwen/reproduce.sh test9     # round 9: held-out lanes for the chosen default
#   bash docs/results/qwen/reproduce.sh dev10     # round 10: development (names searched for when a draft needs them)
#   bash docs/results/qwen/reproduce.sh test10    # round 10: held-out lanes for the chosen default (not run: none chosen)
#   bash docs/results/qwen/reproduce.sh test10q   # round 10: today's default on HotpotQA, the seed-3 bridge questions, MuSiQue
#   bash docs/results/qwen/reproduce.sh dev11     # round 11: development only (trim_found alone)
#   bash docs/results/qwen/reproduce.sh test12    # round 12: trim_found as the default, held out
#   bash docs/results/qwen/reproduce.sh dev13     # round 13: possessives in the checker; its coverage recalibrated
#   bash docs/results/qwen/reproduce.sh test13    # round 13: the chosen default, held out
#   bash docs/results/qwen/reproduce.sh dev14     # round 14: the shown verdict at Qwen's coverage; excerpts capped
#   bash docs/results/qwen/reproduce.sh test14    # round 14: the chosen default, held out
#   bash docs/results/qwen/reproduce.sh dev15     # round 15: development (one passage per followed name; a higher floor)
#   bash docs/results/qwen/reproduce.sh test15    # round 15: the chosen default, held out (2Wiki 1200-1299, seed-5 world)
#   bash docs/results/qwen/reproduce.sh test15m   # round 15: today's default on MuSiQue 300-399, two lanes
#   bash docs/results/qwen/reproduce.sh dev16     # round 16: development (what a sentence is about)
#   bash docs/results/qwen/reproduce.sh dev16b    # round 16: development, third version (an opening word a name only when whole)
#   bash docs/results/qwen/reproduce.sh test16    # round 16: held out (seed-5 world 100-159, long form and bridge; 2Wiki 1300-1399)
#   bash docs/results/qwen/reproduce.sh test17    # round 17: today's default held out (2Wiki 1417-1602, HotpotQA 400-599)
#   bash docs/results/qwen/reproduce.sh test18    # round 18: today's default held out (seed-6 world 40-159, HotpotQA 571-806)
#   bash docs/results/qwen/reproduce.sh lane NAME # one lane function alone (to resume it)
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

# -- round 2 (PROTOCOL.md, "Round 2"): the first sentence checked, draft documents first, hop queries --
BRIDGE=docs/results/world/data/bridge
PAIR=(--method single --method "$DEFAULT")
# dev2/{bridge,2wiki,world} ran at commit 7da7d44, before hop queries (`git checkout 7da7d44` to
# redo them); this code gives the -hop lanes.
dev2_bridge() { ev --dataset $BRIDGE --limit 20 --method "$DEFAULT" "${QA[@]}" --out $OUT/dev2/bridge-hop; }
dev2_2wiki() { ev --dataset 2wikimultihopqa --limit 30 --method "$DEFAULT" "${QA[@]}" --out $OUT/dev2/2wiki-hop; }
dev2_world() { ev --dataset $WORLD --limit 20 --method "$DEFAULT" "${LONG[@]}" --out $OUT/dev2/world-hop; }
test2_bridge() { ev --dataset $BRIDGE --offset 40 --limit 120 "${PAIR[@]}" "${QA[@]}" --out $OUT/test2/bridge; }
test2_2wiki() { ev --dataset 2wikimultihopqa --offset 100 --limit 100 "${PAIR[@]}" "${QA[@]}" --out $OUT/test2/2wiki; }
test2_hotpot() { ev --dataset hotpotqa --offset 100 --limit 100 "${PAIR[@]}" "${QA[@]}" --out $OUT/test2/hotpotqa; }
test2_world() { ev --dataset $WORLD --offset 40 --limit 120 "${PAIR[@]}" "${LONG[@]}" --out $OUT/test2/world; }

# -- round 3 (PROTOCOL.md, "Round 3"): follow the names the answer brings in ------------------------
D3=flare:trigger=support,verify=flag
dev3_lane() {  # dev3_lane NAME DATASET SETTING ARGS...: the default with one option, development questions
  local name=$1 data=$2 opt=$3; shift 3
  ev --dataset "$data" --method "$D3${opt:+,$opt}" "$@" --out $OUT/dev3/$name
}
dev3_world_before() { dev3_lane world-before $WORLD new_docs=before,follow_names=false --limit 20 "${LONG[@]}"; }
dev3_world_after() { dev3_lane world-after $WORLD new_docs=after,follow_names=false --limit 20 "${LONG[@]}"; }
dev3_bridge_before() { dev3_lane bridge-before $BRIDGE new_docs=before,follow_names=false --limit 20 "${QA[@]}"; }
dev3_bridge_after() { dev3_lane bridge-after $BRIDGE new_docs=after,follow_names=false --limit 20 "${QA[@]}"; }
dev3_world_follow() { dev3_lane world-follow $WORLD follow_names=true --limit 20 "${LONG[@]}"; }
dev3_bridge_follow() { dev3_lane bridge-follow $BRIDGE follow_names=true --limit 20 "${QA[@]}"; }
dev3_2wiki_follow() { dev3_lane 2wiki-follow 2wikimultihopqa follow_names=true --limit 30 "${QA[@]}"; }
PAIR3=(--method single --method "$D3,follow_names=true")
test3_bridge() { ev --dataset $BRIDGE --offset 40 --limit 60 "${PAIR3[@]}" "${QA[@]}" --out $OUT/test3/bridge; }
test3_2wiki() { ev --dataset 2wikimultihopqa --offset 200 --limit 100 "${PAIR3[@]}" "${QA[@]}" --out $OUT/test3/2wiki; }
test3_hotpot() { ev --dataset hotpotqa --offset 200 --limit 100 "${PAIR3[@]}" "${QA[@]}" --out $OUT/test3/hotpotqa; }
test3_world() { ev --dataset $WORLD --offset 102 --limit 58 "${PAIR3[@]}" "${LONG[@]}" --out $OUT/test3/world; }

# -- round 4 (PROTOCOL.md, "Round 4"): a name filter on followed passages (rejected), a second world --
# dev4/ ran at commit 0e21d44, with the filter (`git checkout 0e21d44` to redo it); this code,
# where it is reverted, gives round 3's default. The second world (seed 1) is committed; its
# folders' README.md give the generator's command.
WORLD1=docs/results/world/data/world-s1
BRIDGE1=docs/results/world/data/world-s1-bridge
D4=flare:trigger=support,verify=flag,follow_names=true
dev4_world() { ev --dataset $WORLD --limit 20 --method "$D4" "${LONG[@]}" --out $OUT/dev4/world; }
dev4_bridge() { ev --dataset $BRIDGE --limit 20 --method "$D4" "${QA[@]}" --out $OUT/dev4/bridge; }
dev4_2wiki() { ev --dataset 2wikimultihopqa --limit 30 --method "$D4" "${QA[@]}" --out $OUT/dev4/2wiki; }
PAIR4=(--method single --method "$D4")
test4_2wiki() { ev --dataset 2wikimultihopqa --offset 300 --limit 100 "${PAIR4[@]}" "${QA[@]}" --out $OUT/test4/2wiki; }
test4_world() { ev --dataset $WORLD1 --offset 40 --limit 60 "${PAIR4[@]}" "${LONG[@]}" --out $OUT/test4/world-s1; }
test4_bridge() { ev --dataset $BRIDGE1 --offset 40 --limit 60 "${PAIR4[@]}" "${QA[@]}" --out $OUT/test4/bridge-s1; }
test4_world_then_bridge() { test4_world; test4_bridge; }

# -- round 5 (PROTOCOL.md, "Round 5"): fair timing, follow_k=1, sentences checked against cited passages --
# dev5/{bridge,2wiki,world} ran with follow_k=1 (rejected; stopped part way, see PROTOCOL.md); the
# -cited lanes measure (i) alone.
D5=flare:trigger=support,verify=flag,follow_names=true,follow_k=3
PAIR5=(--method single --method "$D5")
dev5_bridge() { ev --dataset $BRIDGE --limit 20 --method "$D5" "${QA[@]}" --out $OUT/dev5/bridge-cited; }
dev5_2wiki() { ev --dataset 2wikimultihopqa --limit 30 --method "$D5" "${QA[@]}" --out $OUT/dev5/2wiki-cited; }
dev5_world() { ev --dataset $WORLD --limit 20 --method "$D5" "${LONG[@]}" --out $OUT/dev5/world-cited; }
dev5_bridge_then_world() { dev5_bridge; dev5_world; }
test5_2wiki() { ev --dataset 2wikimultihopqa --offset 400 --limit 100 "${PAIR5[@]}" "${QA[@]}" --out $OUT/test5/2wiki; }
test5_musique() { ev --dataset musique --offset 100 --limit 100 "${PAIR5[@]}" "${QA[@]}" --out $OUT/test5/musique; }
test5_bridge() { ev --dataset $BRIDGE1 --offset 40 --limit 60 "${PAIR5[@]}" "${QA[@]}" --out $OUT/test5/bridge-s1; }
test5_world() { ev --dataset $WORLD1 --offset 73 --limit 27 "${PAIR5[@]}" "${LONG[@]}" --out $OUT/test5/world-s1; }
test5_zh() { ev --dataset benchmarks/qinglan-zh --split test "${PAIR5[@]}" --out $OUT/test5/zh; }
test5_asqa() { ev --dataset asqa --offset 200 --limit 100 "${PAIR5[@]}" "${LONG[@]}" --out $OUT/test5/asqa; }
test5_2wiki_a() { ev --dataset 2wikimultihopqa --offset 500 --limit 50 "${PAIR5[@]}" "${QA[@]}" --out $OUT/test5/2wiki-500; }
test5_2wiki_b() { ev --dataset 2wikimultihopqa --offset 550 --limit 50 "${PAIR5[@]}" "${QA[@]}" --out $OUT/test5/2wiki-550; }
test5_lane1() { test5_2wiki; test5_musique; }
test5_more1() { test5_musique; test5_2wiki_a; }  # added after round 6 (PROTOCOL.md): completes round 5
test5_more2() { test5_asqa; test5_2wiki_b; }
# The seed-1 world's long form with the paragraph exemplars (PROTOCOL.md: before this, world-s1 got the multi-hop set).
test5_world_a() { ev --dataset $WORLD1 --offset 100 --limit 30 "${PAIR5[@]}" "${LONG[@]}" --out $OUT/test5/world-s1-100; }
test5_world_b() { ev --dataset $WORLD1 --offset 130 --limit 30 "${PAIR5[@]}" "${LONG[@]}" --out $OUT/test5/world-s1-130; }
test5_lane2() { test5_bridge; test5_world; test5_zh; test5_asqa; }

# -- round 6 (PROTOCOL.md, "Round 6"): draft before following names, found passages trimmed -------
D6=flare:trigger=support,verify=flag,follow_names=true,follow_k=3,draft_before_follow=true,trim_found=true
PAIR6=(--method single --method "$D6")
dev6_lane() {  # dev6_lane NAME METHOD: the development questions of rounds 2-5
  ev --dataset 2wikimultihopqa --limit 30 --method "$2" "${QA[@]}" --out $OUT/dev6/2wiki-$1
  ev --dataset $BRIDGE --limit 20 --method "$2" "${QA[@]}" --out $OUT/dev6/bridge-$1
  ev --dataset $WORLD --limit 20 --method "$2" "${LONG[@]}" --out $OUT/dev6/world-$1
}
dev6_base() { dev6_lane base "$D5"; }
dev6_both() { dev6_lane both "$D6"; }
test6_2wiki() { ev --dataset 2wikimultihopqa --offset 500 --limit 100 "${PAIR6[@]}" "${QA[@]}" --out $OUT/test6/2wiki; }
test6_bridge() { ev --dataset $BRIDGE1 --offset 100 --limit 60 "${PAIR6[@]}" "${QA[@]}" --out $OUT/test6/bridge-s1; }
test6_world() { ev --dataset $WORLD1 --offset 100 --limit 60 "${PAIR6[@]}" "${LONG[@]}" --out $OUT/test6/world-s1; }
test6_lane2() { test6_bridge; test6_world; }

# -- round 7 (PROTOCOL.md, "Round 7"): the cache moved past inserted passages; two followed passages a name --
D7=flare:trigger=support,verify=flag,follow_names=true,follow_k=2
WORLD2=docs/results/world/data/world-s2
dev7_lane() {  # dev7_lane NAME METHOD [EVAL ARGS...]: round 6's development questions (base: dev6/*-base)
  local name=$1 method=$2; shift 2
  ev --dataset 2wikimultihopqa --limit 30 --method "$method" "${QA[@]}" "$@" --out $OUT/dev7/2wiki-$name
  ev --dataset $BRIDGE --limit 20 --method "$method" "${QA[@]}" "$@" --out $OUT/dev7/bridge-$name
  ev --dataset $WORLD --limit 20 --method "$method" "${LONG[@]}" "$@" --out $OUT/dev7/world-$name
}
dev7_shift() { dev7_lane shift "$D5" --shift-cache; }
dev7_shift2() { dev7_lane shift2 "$D7" --shift-cache; }
# The check of the chosen lane with the insertion undone for the next draft (PROTOCOL.md, round 7 addendum).
dev7u_2wiki() { ev --dataset 2wikimultihopqa --limit 30 --method "$D7" "${QA[@]}" --shift-cache --out $OUT/dev7/2wiki-shift2u; }
dev7u_rest() {
  ev --dataset $BRIDGE --limit 20 --method "$D7" "${QA[@]}" --shift-cache --out $OUT/dev7/bridge-shift2u
  ev --dataset $WORLD --limit 20 --method "$D7" "${LONG[@]}" --shift-cache --out $OUT/dev7/world-shift2u
}
T7=${T7:-$D7}  # the default chosen by round 7's rule (PROTOCOL.md); its lanes add --shift-cache
test7_2wiki() { ev --dataset 2wikimultihopqa --offset 600 --limit 100 --method single --method "$T7" "${QA[@]}" \
                  --shift-cache --out $OUT/test7/2wiki; }
test7_world() { ev --dataset $WORLD2 --offset 40 --limit 60 --method single --method "$T7" "${LONG[@]}" \
                  --shift-cache --out $OUT/test7/world-s2; }
test7_zh() { ev --dataset benchmarks/qinglan-zh --split test --method single --method "$T7" --shift-cache \
               --out $OUT/test7/zh; }
test7_asqa() { ev --dataset asqa --offset 300 --limit 50 --method single --method "$T7" "${LONG[@]}" --shift-cache \
                 --out $OUT/test7/asqa; }

# -- round 8 (PROTOCOL.md, "Round 8"): found passages scoring far below their search's best are not read --
dev_lane() {  # dev_lane DIR NAME METHOD: rounds 7-9's development questions, cache shifted, into DIR/*-NAME
  ev --dataset 2wikimultihopqa --limit 30 --method "$3" "${QA[@]}" --shift-cache --out $OUT/$1/2wiki-$2
  ev --dataset $BRIDGE --limit 20 --method "$3" "${QA[@]}" --shift-cache --out $OUT/$1/bridge-$2
  ev --dataset $WORLD --limit 20 --method "$3" "${LONG[@]}" --shift-cache --out $OUT/$1/world-$2
}
paired() {  # paired OUT METHOD EVAL ARGS...: single and METHOD on the same questions, cache shifted
  local out=$1 method=$2; shift 2
  ev "$@" --method single --method "$method" --shift-cache --out $OUT/$out
}
dev8_lane() { dev_lane dev8 "$1" "$D7,found_floor=$2"; }  # dev8_lane NAME FLOOR (base: dev7/*-shift2u)
dev8_floor50() { dev8_lane floor50 0.5; }
dev8_floor75() { dev8_lane floor75 0.75; }
T8=${T8:-$D7,found_floor=0.5}  # the default chosen by round 8's rule (PROTOCOL.md)
test8_2wiki() { paired test8/2wiki "$T8" --dataset 2wikimultihopqa --offset 700 --limit 100 "${QA[@]}"; }
test8_rest() {
  paired test8/world-s2 "$T8" --dataset $WORLD2 --offset 106 --limit 54 "${LONG[@]}"
  paired test8/asqa "$T8" --dataset asqa --offset 350 --limit 50 "${LONG[@]}"
}
test8_nofloor() {  # round 7's default on the same 2WikiMultihopQA questions: OFFSET LIMIT
  ev --dataset 2wikimultihopqa --offset $1 --limit $2 --method "$D7,found_floor=0" "${QA[@]}" --shift-cache \
     --out $OUT/test8/2wiki-nofloor-$1
}
test8_nofloor_a() { test8_nofloor 700 50; }
test8_nofloor_b() { test8_nofloor 750 50; }

# -- round 9 (PROTOCOL.md, "Round 9"): a name whose best match is already read is not followed to other pages --
D8=$D7,found_floor=0.5  # round 8's default; round 9's development base is dev8/*-floor50
dev9_known() { dev_lane dev9 known "$D8,skip_known_names=true"; }
dev9_retry() {
  dev_lane dev9 retry flare:trigger=support,verify=retry,retry_then=flag,follow_names=true,follow_k=2,found_floor=0.5,skip_known_names=true
}
D9=$D8,skip_known_names=true  # round 9's default, today's
T9=${T9:-$D9}  # the default chosen by round 9's rule (PROTOCOL.md)
WORLD3=docs/results/world/data/world-s3
test9_2wiki() { paired test9/2wiki "$T9" --dataset 2wikimultihopqa --offset 800 --limit 100 "${QA[@]}"; }
test9_rest() {
  paired test9/world-s3 "$T9" --dataset $WORLD3 --offset 40 --limit 60 "${LONG[@]}"
  paired test9/asqa "$T9" --dataset asqa --offset 400 --limit 50 "${LONG[@]}"
}

# -- round 10 (PROTOCOL.md, "Round 10"): names searched for only when a draft needs them --------
dev10_base() { dev_lane dev10 base "$D9"; }
dev10_lazy() { dev_lane dev10 lazy "$D9,lazy_follow=true"; }
T10=${T10:-$D9,lazy_follow=true}  # the default chosen by round 10's rule (PROTOCOL.md)
test10_2wiki() { paired test10/2wiki "$T10" --dataset 2wikimultihopqa --offset 900 --limit 100 "${QA[@]}"; }
test10_rest() {
  paired test10/world-s3 "$T10" --dataset $WORLD3 --offset 100 --limit 60 "${LONG[@]}"
  paired test10/asqa "$T10" --dataset asqa --offset 450 --limit 50 "${LONG[@]}"
}
# Round 10's rule kept lazy_follow off; the lanes measure today's default (D9) instead.
WORLD3B=docs/results/world/data/world-s3-bridge
test10q_hotpot() { paired test10/hotpotqa "$D9" --dataset hotpotqa --offset 300 --limit 100 "${QA[@]}"; }
test10q_rest() {
  paired test10/world-s3-bridge "$D9" --dataset $WORLD3B --offset 40 --limit 60 "${QA[@]}"
  paired test10/musique "$D9" --dataset musique --offset 200 --limit 100 "${QA[@]}"
}
# -- round 11 (PROTOCOL.md, "Round 11"): trim_found alone, development only ----------------------
dev11_trim() { dev_lane dev11 trim "$D9,trim_found=true"; }

# -- round 12 (PROTOCOL.md, "Round 12"): trim_found as the default, held out --------------------------
D12=$D9,trim_found=true  # round 12's default; round 13's development base is dev11/*-trim
T12=${T12:-$D12}  # the default chosen by round 11's development rule
test12_2wiki() { paired test12/2wiki "$T12" --dataset 2wikimultihopqa --offset 900 --limit 100 "${QA[@]}"; }
test12_rest() {
  paired test12/world-s3 "$T12" --dataset $WORLD3 --offset 100 --limit 60 "${LONG[@]}"
  paired test12/world-s3-bridge "$T12" --dataset $WORLD3B --offset 100 --limit 60 "${QA[@]}"
  paired test12/asqa "$T12" --dataset asqa --offset 450 --limit 50 "${LONG[@]}"
}

# -- round 13 (PROTOCOL.md, "Round 13"): possessives in the checker, its coverage recalibrated ------
dev13_poss() { dev_lane dev13 poss "$D12,support_coverage=0.8"; }
dev13_cov() { dev_lane dev13 cov "$D12,support_coverage=0.6"; }
T13=${T13:-$D12,support_coverage=0.8}  # round 13's rule chose neither lane: round 12's default (PROTOCOL.md)
WORLD4=docs/results/world/data/world-s4
test13_2wiki() { paired test13/2wiki "$T13" --dataset 2wikimultihopqa --offset 1000 --limit 100 "${QA[@]}"; }
test13_rest() {
  paired test13/world-s4 "$T13" --dataset $WORLD4 --offset 40 --limit 60 "${LONG[@]}"
  paired test13/world-s4-bridge "$T13" --dataset $WORLD4-bridge --offset 40 --limit 60 "${QA[@]}"
}

# -- round 14 (PROTOCOL.md, "Round 14"): the shown verdict at Qwen's coverage; excerpts capped ------
D14=$D12,verify_coverage=0.6  # round 14's default, today's; round 15's development base is dev14/*-mark
dev14_mark() { dev_lane dev14 mark "$D14"; }
dev14_cap() { dev_lane dev14 cap "$D14,trim_sentences=1"; }
T14=${T14:-$D14}  # round 14's rule chose (q) alone (PROTOCOL.md)
test14_2wiki() { paired test14/2wiki "$T14" --dataset 2wikimultihopqa --offset 1100 --limit 100 "${QA[@]}"; }
test14_rest() {
  paired test14/world-s4 "$T14" --dataset $WORLD4 --offset 100 --limit 60 "${LONG[@]}"
  paired test14/world-s4-bridge "$T14" --dataset $WORLD4-bridge --offset 100 --limit 60 "${QA[@]}"
  # ASQA 500-549 was declared here too, but ASQA has 500 questions: it ran none (PROTOCOL.md, round 15).
}

# -- round 15 (PROTOCOL.md, "Round 15"): one passage per followed name; a higher floor for found ones --
dev15_one() { dev_lane dev15 one "$D14,follow_k=1"; }
dev15_lean() { dev_lane dev15 lean "$D14,follow_k=1,found_floor=0.7"; }
T15=${T15:-$D14}  # set to the default round 15's rule chooses (PROTOCOL.md)
WORLD5=docs/results/world/data/world-s5
test15_2wiki() { paired test15/2wiki "$T15" --dataset 2wikimultihopqa --offset 1200 --limit 100 "${QA[@]}"; }
test15_rest() {
  paired test15/world-s5 "$T15" --dataset $WORLD5 --offset 40 --limit 60 "${LONG[@]}"
  paired test15/world-s5-bridge "$T15" --dataset $WORLD5-bridge --offset 40 --limit 60 "${QA[@]}"
}
test15m() { paired test15/musique-$1 "$T15" --dataset musique --offset $1 --limit 50 "${QA[@]}"; }  # test15m FIRST
test15m_a() { test15m 300; }
test15m_b() { test15m 350; }

# -- round 16 (PROTOCOL.md, "Round 16"): what a sentence is about (verify/support.py subject()) --
# Code change, not a setting: dev16 and test16 ran at the commit that made it; D14 before it is
# `git checkout 178c92f`.
# The first version (-subj) ran at 23af439; the third (-whole: an opening word a name only when whole) at
# the commit after e09a160 (the second, possessives dropped, was withdrawn before it ran).
# dev16b and test16 ran at b85a74e; 46df10b (personal pointers resolved as before) changes no
# subject in their traces (PROTOCOL.md).
dev16_2wiki() { ev --dataset 2wikimultihopqa --limit 30 --method "$D14" "${QA[@]}" --shift-cache --out $OUT/dev16/2wiki-$1; }
dev16_bridge() { ev --dataset $BRIDGE --limit 20 --method "$D14" "${QA[@]}" --shift-cache --out $OUT/dev16/bridge-$1; }
dev16_world() { ev --dataset $WORLD --limit 20 --method "$D14" "${LONG[@]}" --shift-cache --out $OUT/dev16/world-$1; }
dev16_qa() { dev16_2wiki subj; dev16_bridge subj; }
dev16_w() { dev16_world subj; }
dev16b_2wiki() { dev16_2wiki whole; }
dev16b_rest() { dev16_world whole; dev16_bridge whole; }
test16_world() { paired test16/world-s5 "$D14" --dataset $WORLD5 --offset 100 --limit 60 "${LONG[@]}"; }
test16_rest() {
  paired test16/world-s5-bridge "$D14" --dataset $WORLD5-bridge --offset 100 --limit 60 "${QA[@]}"
  paired test16/2wiki "$D14" --dataset 2wikimultihopqa --offset 1300 --limit 100 "${QA[@]}"
}
# Added once lane 1 ended (PROTOCOL.md): 1350-1399 on its core; lane 2 is reported for 1300-1349.
test16_2wiki_b() { paired test16/2wiki-1350 "$D14" --dataset 2wikimultihopqa --offset 1350 --limit 50 "${QA[@]}"; }
# Added once lane 2 had finished 1300-1349 (PROTOCOL.md): 1400-1449 on its core, until 21:00 UTC.
test16_2wiki_c() { paired test16/2wiki-1400 "$D14" --dataset 2wikimultihopqa --offset 1400 --limit 50 "${QA[@]}"; }

# -- round 17 (PROTOCOL.md, "Round 17"): today's default, held out, no change --------------------
# Ran at cd0f346 (round 16's code) until 00:20 UTC, as PROTOCOL.md declares: 2Wiki 1417-1577 and
# HotpotQA 400-570 finished by both methods (rerunning a lane resumes it).
test17_2wiki() { paired test17/2wiki "$D14" --dataset 2wikimultihopqa --offset 1417 --limit 186 "${QA[@]}"; }
test17_hotpot() { paired test17/hotpotqa "$D14" --dataset hotpotqa --offset 400 --limit 200 "${QA[@]}"; }

# -- round 18 (PROTOCOL.md, "Round 18"): today's default held out on a new world (seed 6) and on a
# fresh HotpotQA set, with the answer extractor of 54c56ec (earlier rounds are re-scored only in analysis) --
WORLD6=docs/results/world/data/world-s6
test18_a() {
  paired test18/world-s6-40 "$D14" --dataset $WORLD6 --offset 40 --limit 60 "${LONG[@]}"
  paired test18/hotpotqa-571 "$D14" --dataset hotpotqa --offset 571 --limit 118 "${QA[@]}"
}
test18_b() {
  paired test18/world-s6-100 "$D14" --dataset $WORLD6 --offset 100 --limit 60 "${LONG[@]}"
  paired test18/hotpotqa-689 "$D14" --dataset hotpotqa --offset 689 --limit 118 "${QA[@]}"
}

report() {  # every lane's report.md, from its results.jsonl (each round's folder under $OUT)
  for results in $OUT/*/*/results.jsonl; do
    "$FLARE" eval --report-only --dataset unused --out "$(dirname "$results")"
  done
}

case "${1:-all}" in
  dev) lanes dev_ctl_on dev_ctl_off dev_query ;;
  test) lanes test_world test_2wiki test_zh test_asqa test_musique test_hotpot ;;
  dev2) lanes dev2_bridge dev2_2wiki dev2_world ;;
  test2) lanes test2_bridge test2_2wiki test2_hotpot test2_world ;;
  dev3) lanes dev3_world_before dev3_world_after dev3_bridge_before dev3_bridge_after dev3_world_follow \
          dev3_bridge_follow dev3_2wiki_follow ;;
  test3) lanes test3_bridge test3_2wiki test3_hotpot test3_world ;;
  dev4) lanes dev4_2wiki dev4_world dev4_bridge ;;
  test4) lanes test4_2wiki test4_world_then_bridge ;;
  dev5) lanes dev5_2wiki dev5_bridge_then_world ;;
  test5) lanes test5_lane1 test5_lane2 ;;
  test5more) lanes test5_more1 test5_more2 ;;
  test5world) lanes test5_world_a test5_world_b ;;
  dev6) lanes dev6_base dev6_both ;;
  test6) lanes test6_2wiki test6_lane2 ;;
  dev7) lanes dev7_shift dev7_shift2 ;;
  dev7u) lanes dev7u_2wiki dev7u_rest ;;
  test7) lanes test7_2wiki test7_world ;;
  test7more) lanes test7_zh test7_asqa ;;
  dev8) lanes dev8_floor50 dev8_floor75 ;;
  test8) lanes test8_2wiki test8_rest ;;
  test8nofloor) lanes test8_nofloor_a test8_nofloor_b ;;
  dev9) lanes dev9_known dev9_retry ;;
  test9) lanes test9_2wiki test9_rest ;;
  dev10) lanes dev10_base dev10_lazy ;;
  test10) lanes test10_2wiki test10_rest ;;
  test10q) lanes test10q_hotpot test10q_rest ;;
  dev11) lanes dev11_trim ;;
  test12) lanes test12_2wiki test12_rest ;;
  dev13) lanes dev13_poss dev13_cov ;;
  test13) lanes test13_2wiki test13_rest ;;
  dev14) lanes dev14_mark dev14_cap ;;
  test14) lanes test14_2wiki test14_rest ;;
  dev15) lanes dev15_one dev15_lean ;;
  test15) lanes test15_2wiki test15_rest ;;
  test15m) lanes test15m_a test15m_b ;;
  dev16) lanes dev16_qa dev16_w ;;
  dev16b) lanes dev16b_2wiki dev16b_rest ;;
  test16) lanes test16_world test16_rest ;;
  test17) lanes test17_2wiki test17_hotpot ;;
  test18) lanes test18_a test18_b ;;
  lane) shift; for lane in "$@"; do "$lane"; done ;;  # named lanes one after the other, e.g. lane dev6_both
  report) report ;;
  all) lanes dev_ctl_on dev_ctl_off dev_query; lanes test_world test_2wiki test_zh test_asqa test_musique test_hotpot; report ;;
  *) echo "usage: $0 [dev|test|dev2|test2|dev3|test3|dev4|test4|dev5|test5|test5more|test5world|dev6|test6|report|all]" >&2; exit 2 ;;
esac
