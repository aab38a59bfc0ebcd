#!/usr/bin/env bash
# Every GPU measurement still to take on a machine with a real GPU, in one command, each step
# under its own time limit so that a call cut short keeps what it measured:
#
#   source .device/prelude.sh && bash bench/gpu_device.sh [STEP ...]
#
# STEP, in the order given (default: all, in this order):
#   reduce      bench/reduce.py            (limit REDUCE_S, default 240 s)
#   elementwise bench/elementwise.py       (ELEMENTWISE_S, 150 s)
#   mutant      the signed-% mutant fuzzed on this GPU (MUTANT_S, 90 s)
#   campaign    the cross-adapter gpu campaign, seed 0 (CAMPAIGN_S, 120 s; FUZZ_JOBS, 12)
#   matmul      bench/matmul.py            (MATMUL_S, 240 s)
# Results go under $OUT (a temporary folder without it), a line per step in $OUT/steps.txt;
# the tables are printed last. reduce.py and matmul.py write their JSON after each workload.
set -uo pipefail
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export FUSELAB_CACHE_DIR=$out/cache
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(reduce elementwise mutant campaign matmul)
start=$(date +%s)

step() {  # step NAME LIMIT COMMAND...: run, log its status and times
    local name=$1 limit=$2 began
    shift 2
    began=$(date +%s)
    timeout "$limit" "$@"
    echo "$name: exit $? after $(( $(date +%s) - began )) s (at $(( $(date +%s) - start )) s)" \
        >> "$out/steps.txt"
}

for s in "${steps[@]}"; do
    case $s in
    reduce) step reduce "${REDUCE_S:-240}" python3 bench/reduce.py --reps 20 \
        --out "$out/reduce" > "$out/reduce.txt" 2>&1 ;;
    elementwise) step elementwise "${ELEMENTWISE_S:-150}" python3 bench/elementwise.py \
        --reps 20 --profile --out "$out/elementwise" > "$out/elementwise.txt" 2>&1 ;;
    mutant) step mutant "${MUTANT_S:-90}" python3 bench/fuzz_mutants.py --limit 60 \
        --jobs "${FUZZ_JOBS:-12}" --json "$out/mutants.json" --only signed-rem-lowering-off \
        > "$out/mutants.md" 2>&1 ;;
    campaign) step campaign "${CAMPAIGN_S:-120}" python3 -m fuselab fuzz \
        --time "$(( ${CAMPAIGN_S:-120} - 30 ))s" --seed 0 --jobs "${FUZZ_JOBS:-12}" \
        --checks gpu --out "$out/gpu" --json > "$out/campaign.json" 2> "$out/campaign.err" ;;
    matmul) step matmul "${MATMUL_S:-240}" python3 bench/matmul.py --reps 20 \
        --out "$out/matmul" > "$out/matmul.txt" 2>&1 ;;
    *) echo "unknown step: $s" >&2; exit 2 ;;
    esac
done

cat "$out/steps.txt"
for f in reduce elementwise matmul; do
    [ -f "$out/$f.txt" ] && { echo "--- $f"; grep -v XDG_RUNTIME "$out/$f.txt" | tail -40; }
done
[ -f "$out/mutants.md" ] && { echo "--- mutant"; tail -5 "$out/mutants.md"; }
[ -s "$out/campaign.json" ] && python3 - "$out/campaign.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"--- campaign: {c['streams']} streams, {c['findings']} findings")
for key, bucket in c["buckets"].items():
    print(f"  {bucket['count']:5d}  {key}")
PY
exit 0
