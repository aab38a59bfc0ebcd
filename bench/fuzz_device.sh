#!/usr/bin/env bash
# The fuzzer on a machine with a real GPU (the lent NVIDIA one), in one command:
#
#   source .device/prelude.sh && bash bench/fuzz_device.sh
#
# 1. cross-adapter campaign: the same streams as on lavapipe (FUZZ_COUNT streams of seed
#    FUZZ_SEED, the gpu check), repros under $OUT/gpu/;
# 2. the codegen mutants fuzzed on this GPU (bench/fuzz_mutants.py), the two real bugs first:
#    signed-rem-lowering-off (WGSL % on signed ints) must be found here;
# 3. throughput on FUZZ_JOBS processes: the default checks, then the gpu check.
# Results go under $OUT (a temporary folder without it); the tables are printed last.
set -euo pipefail
out=${OUT:-$(mktemp -d)}
count=${FUZZ_COUNT:-1000}
seed=${FUZZ_SEED:-0}
jobs=${FUZZ_JOBS:-2}
python3 -c "from gpu.runtime.device import default_device; print(default_device().info())" \
    | tee "$out/adapter.txt"
python3 -m fuselab fuzz --count "$count" --seed "$seed" --jobs "$jobs" --checks gpu \
    --out "$out/gpu" --json > "$out/gpu-campaign.json" || true
python3 bench/fuzz_mutants.py --limit "${FUZZ_MUTANT_LIMIT:-60}" --jobs "$jobs" \
    --json "$out/mutants.json" --only signed-rem-lowering-off broadcast-view-strides-reverted \
    $(python3 -c "from fuselab.fuzz.mutants import MUTANTS; print(' '.join(n for n, m in \
MUTANTS.items() if m.area == 'codegen' and n not in ('signed-rem-lowering-off', \
'broadcast-view-strides-reverted')))") > "$out/mutants.md"
python3 -m fuselab fuzz --count 3000 --jobs "$jobs" --json > "$out/throughput-cpu.json" || true
python3 -m fuselab fuzz --count 300 --jobs "$jobs" --checks gpu --json \
    > "$out/throughput-gpu.json" || true
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
campaign = json.load(open(f"{out}/gpu-campaign.json"))
print(f"gpu campaign: {campaign['streams']} streams, {campaign['findings']} findings")
for key, bucket in campaign["buckets"].items():
    print(f"  {bucket['count']:5d}  {key}  ({bucket.get('repro_dir')})")
for name in ("cpu", "gpu"):
    summary = json.load(open(f"{out}/throughput-{name}.json"))
    print(f"throughput {name}: {summary['streams_per_s'] * 60:.0f} streams/min "
          f"({summary['streams']} streams, {summary['config']['jobs']} jobs)")
PY
cat "$out/mutants.md"
