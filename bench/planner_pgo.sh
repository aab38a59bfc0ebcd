#!/usr/bin/env bash
# The plain build of fastplan against the profile-guided one (setup.py's FASTPLAN_PGO), on a
# GPU machine's CPU, in one command: what `make build`'s default should be (docs/benchmarks.md,
# "Planner: plain or profile-guided build").
#
#   export FASTPLAN_NO_EXTENSIONS=1 && source .device/prelude.sh && unset FASTPLAN_NO_EXTENSIONS \
#       && bash bench/planner_pgo.sh
#
# (FASTPLAN_NO_EXTENSIONS=1 only spares the prelude its own build of the tree in place: this
# script builds two copies of the tree from scratch and never imports the one in place.)
#
# 1. Copies the tree twice under a temporary folder, without any build output (no build/, no
#    fastplan/*.c, no *.so: as a fresh clone), and builds them one after the other, each timed
#    alone with every core (FASTPLAN_BUILD_JOBS = nproc): `plain` with FASTPLAN_PGO=0, `pgo`
#    with FASTPLAN_PGO=1 (instrumented build, tools/pgo_train.py, build again). Both under
#    FASTPLAN_REQUIRE_EXTENSIONS=1, so a failed build or training stops the run; each build's
#    mode (build/fastplan-build-mode) and fastplan's import path are checked.
# 2. `python -m fuselab bench planner --workload W --sizes 1000,10000 --repeats 3
#    --ref-budget 100 --json` in each copy, for W = transformer, elementwise, mixed: six
#    processes at once, each pinned to its own physical core, the plain and the profile-guided
#    run of a workload side by side (so that whatever the machine does falls on both).
# 3. bench/planner_ab.py, plain then profile-guided in turns (7 processes each, one at a time
#    per workload and size, pinned to one core): fastplan's paths alone, the A/B that timing
#    across processes needs; the six (workload, size) pairs on six cores at once.
# 4. Prints the table: build times, `plan()` µs/op (refimpl / fastplan, ratio) per workload
#    and size for both builds, and the profile-guided build's gain, from both measurements.
#
# Results: $OUT/planner_pgo.md (the table), $OUT/planner_pgo.json (every figure) and
# $OUT/planner_pgo-raw.tar.gz (the logs and raw JSON). PLANNER_SIZES, PLANNER_REPEATS,
# PLANNER_AB_ROUNDS (default 7) and PLANNER_BENCH_WORKLOADS (default all three; "none": the
# A/B alone) size a run. The A/B's gain is given two ways: the ratio of the medians (as
# planner_ab.py prints it), and the geometric mean over the rounds of each round's pair
# (plain, then profile-guided, one after the other), pooled over the rows with its standard
# error: the process-to-process spread on these machines is wide (±30 % and more).
set -euo pipefail
unset FASTPLAN_NO_EXTENSIONS
out=${OUT:-$(mktemp -d)}
root=$PWD
sizes=${PLANNER_SIZES:-1000,10000}
repeats=${PLANNER_REPEATS:-3}
rounds=${PLANNER_AB_ROUNDS:-7}
workloads=(transformer elementwise mixed)
bench_workloads=${PLANNER_BENCH_WORKLOADS:-transformer,elementwise,mixed}
bench_workloads=${bench_workloads//none/}
# every stage ends by this many seconds after the start (a device call lasts at most 600 s,
# the prelude included): the bench and the A/B are cut short rather than the whole run
deadline=$(( $(date +%s) + ${PLANNER_PGO_BUDGET_S:-520} ))
left() { local s=$(( deadline - $(date +%s) - $1 )); echo $(( s > 10 ? s : 10 )); }
work=$(mktemp -d)
raw=$work/raw
mkdir -p "$raw"
export OPENBLAS_NUM_THREADS=1 FASTPLAN_BUILD_JOBS=$(nproc)
# the prelude's PYTHONPATH less the tree in place: each copy puts itself first
rest=$(python3 -c 'import os, sys; print(os.pathsep.join(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.realpath(p) != os.path.realpath(sys.argv[1])))' "$root")
pp() { echo "$1${rest:+:$rest}"; }

pack() { tar -C "$work" -czf "$out/planner_pgo-raw.tar.gz" raw 2>/dev/null || true; }
trap pack EXIT

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' || true
    echo "cpu: $(nproc) cores usable,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "python: $(python3 --version 2>&1) ($(PYTHONPATH=$(pp "$root") python3 -c 'from fuselab.bench import interpreter_build as b; print(b())'))"
    echo "cython: $(python3 -c 'import Cython; print(Cython.__version__)')"
    echo "cc: $(cc --version | head -1)"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    lscpu 2>/dev/null || true
} > "$raw/machine.txt"

# one usable CPU per physical core (the first of its hyperthreads), CPU 0 last
cpus=($(python3 - <<'PY'
import os
usable = sorted(os.sched_getaffinity(0))
first = []
for cpu in usable:
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
            sibling = int(f.read().split(",")[0].split("-")[0])
    except (OSError, ValueError):
        sibling = cpu
    if sibling == cpu:
        first.append(cpu)
first = [c for c in first if c != 0] + [c for c in first if c == 0]
if len(first) < 6:
    first = [c for c in usable if c != 0] + [c for c in usable if c == 0]
print(*first)
PY
))
echo "cpus used (one per physical core): ${cpus[*]}" >> "$raw/machine.txt"
pin() { if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }

# --- 1. the two builds, from scratch, one at a time -------------------------------------------
declare -A build_s
for b in plain pgo; do
    dir=$work/$b
    mkdir -p "$dir"
    tar -C "$root" --exclude=./.device --exclude=./build --exclude=./.git --exclude=./.venv \
        --exclude=./out --exclude=./fuzz-out --exclude='*.so' --exclude='./fastplan/*.c' \
        --exclude='./fastplan/*.cpp' --exclude='./fastplan/*.html' --exclude=__pycache__ \
        -cf - . | tar -C "$dir" -xf -
    pgo=0; [ "$b" = pgo ] && pgo=1
    start=$(date +%s.%N)
    (cd "$dir" && env PYTHONPATH="$rest" FASTPLAN_PGO=$pgo FASTPLAN_REQUIRE_EXTENSIONS=1 \
        python3 setup.py -q build_ext --inplace) > "$raw/build-$b.log" 2>&1 || {
        echo "planner_pgo: the $b build failed:"; tail -20 "$raw/build-$b.log"; exit 1; }
    end=$(date +%s.%N)
    build_s[$b]=$(python3 -c "print(round($end - $start, 1))")
    mode=$(cat "$dir/build/fastplan-build-mode")
    where=$(cd "$dir" && PYTHONPATH=$(pp "$dir") python3 -c \
        'import fastplan; assert fastplan.COMPILED, "not compiled"; print(fastplan.planner_module("processor").__file__)')
    case "$where" in "$dir"/*) ;; *) echo "planner_pgo: $b imports fastplan from $where"; exit 1 ;; esac
    echo "$b: FASTPLAN_PGO=$pgo, mode $mode, ${build_s[$b]} s with $FASTPLAN_BUILD_JOBS jobs, $where" \
        | tee -a "$raw/builds.txt"
done

# --- 2. fuselab bench planner in both builds, a workload's two runs side by side --------------
i=0
pids=()
bench_s=$(left 100)  # 100 s kept for the A/B and the table
echo "bench: at most $bench_s s" >> "$raw/machine.txt"
for w in ${bench_workloads//,/ }; do
    for b in plain pgo; do
        (cd "$work/$b" && PYTHONPATH=$(pp "$work/$b") pin "${cpus[$((i % ${#cpus[@]}))]}" timeout "$bench_s" \
            python3 -m fuselab bench planner --workload "$w" --sizes "$sizes" \
            --repeats "$repeats" --ref-budget 100 --json \
            > "$raw/bench-$b-$w.json" 2> "$raw/bench-$b-$w.log") &
        pids+=($!)
        i=$((i + 1))
    done
done
for pid in "${pids[@]}"; do wait "$pid" || echo "planner_pgo: a bench process failed (see raw/bench-*.log)"; done
echo "bench done: $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$raw/machine.txt"

# --- 3. planner_ab.py: plain, then profile-guided, in turns ------------------------------------
i=0
pids=()
ab_s=$(left 8)
echo "A/B: at most $ab_s s" >> "$raw/machine.txt"
for w in "${workloads[@]}"; do
    for size in ${sizes//,/ }; do
        timeout "$ab_s" python3 bench/planner_ab.py --workload "$w" --size "$size" \
            --rounds "$rounds" --cpu "${cpus[$((i % ${#cpus[@]}))]}" --json "$work/plain" "$work/pgo" \
            > "$raw/ab-$w-$size.json" 2> "$raw/ab-$w-$size.log" &
        pids+=($!)
        i=$((i + 1))
    done
done
for pid in "${pids[@]}"; do wait "$pid" || echo "planner_pgo: an A/B process failed (see raw/ab-*.log)"; done
echo "ab done: $(date -u +%T)" >> "$raw/machine.txt"

# --- 4. the table ------------------------------------------------------------------------------
python3 - "$raw" "$work" "${build_s[plain]}" "${build_s[pgo]}" "$sizes" "$out" <<'PY'
import glob, json, math, os, re, statistics, sys
raw, work, plain_s, pgo_s, sizes, out = sys.argv[1:]
plain_s, pgo_s = float(plain_s), float(pgo_s)
sizes = [int(s) for s in sizes.split(",")]
workloads = ("transformer", "elementwise", "mixed")

def bench_rows(build, workload):
    """{size: {path: (refimpl_us, fastplan_us)}} from the JSON, else the progress lines."""
    found = {}
    try:
        with open(f"{raw}/bench-{build}-{workload}.json") as f:
            for r in json.load(f):
                found.setdefault(r["size"], {})[r["path"]] = (r["refimpl_us"], r["fastplan_us"], r["ops"])
        return found
    except (OSError, ValueError):
        pass
    try:
        lines = open(f"{raw}/bench-{build}-{workload}.log").read().splitlines()
    except OSError:
        return found
    asked = iter(sizes)
    for line in lines:
        cells = re.findall(rf"{workload} (\d+) ([a-z+]+): ([\d.]+)/([\d.]+)", line)
        if cells:
            size = next(asked)
            for ops, path, ref, fast in cells:
                found.setdefault(size, {})[path] = (float(ref) or None, float(fast), int(ops))
    return found

bench = {b: {w: bench_rows(b, w) for w in workloads} for b in ("plain", "pgo")}
ab = {}
for w in workloads:
    for size in sizes:
        try:
            with open(f"{raw}/ab-{w}-{size}.json") as f:
                res = json.load(f)[w]
        except (OSError, ValueError, KeyError):
            continue
        roots = list(res["us"])
        pairs = {p: [math.log(a[p] / b[p]) for a, b in zip(res["runs"][roots[0]], res["runs"][roots[1]])]
                 for p in ("plan", "search", "cache", "cache+launch")}
        ab[(w, size)] = {"items": res["items"], "plain": res["us"][roots[0]],
                         "pgo": res["us"][roots[1]], "runs": res["runs"], "log_pairs": pairs}

def gain(plain, pgo):  # how much faster the profile-guided build is: plain / pgo - 1
    return None if not plain or not pgo else (plain / pgo - 1) * 100

fmt = lambda x, d=2: "—" if x is None else f"{x:.{d}f}"
pct = lambda x: "—" if x is None else f"{x:+.1f} %"
lines = []
machine = open(f"{raw}/machine.txt").read().splitlines()
lines += [l for l in machine if l.split(":")[0] in ("date", "gpu", "cpu", "python", "cython", "cc")]
lines.append("")
lines.append(f"build from scratch, {os.environ.get('FASTPLAN_BUILD_JOBS')} jobs: plain {plain_s:.1f} s, "
             f"profile-guided {pgo_s:.1f} s ({pgo_s / plain_s:.2f}× the plain build)")
lines.append("")
lines.append("`plan()`, µs per op: refimpl / fastplan (ratio), `fuselab bench planner`, the two builds' "
             "runs side by side; A/B: fastplan alone, bench/planner_ab.py, medians of the processes in turns")
lines.append("")
lines.append("| workload | ops | plain build | profile-guided build | PGO gain (bench) | A/B plain / PGO µs | PGO gain (A/B medians) | PGO gain (A/B pairs) |")
lines.append("|---|---:|---|---|---:|---|---:|---:|")
gains_bench, gains_ab = [], []
summary = {"build_s": {"plain": plain_s, "pgo": pgo_s}, "rows": []}
for w in workloads:
    for size in sizes:
        cells = {}
        ops = None
        for b in ("plain", "pgo"):
            r = bench[b][w].get(size, {}).get("plan")
            if r:
                ref, fast, ops = r
                ratio = None if ref is None else ref / fast
                cells[b] = (ref, fast, ratio)
        g = gain(cells.get("plain", (0, 0))[1], cells.get("pgo", (0, 0))[1]) if len(cells) == 2 else None
        a = ab.get((w, size))
        ga = gain(a["plain"]["plan"], a["pgo"]["plan"]) if a else None
        if g is not None:
            gains_bench.append(g)
        if ga is not None:
            gains_ab.append(ga)
        show = lambda c: "—" if c is None else f"{fmt(c[0], 1)} / {fmt(c[1])} ({fmt(c[2], 0)}×)"
        lines.append(f"| {w} | {ops or (a or {}).get('items', '?')} | {show(cells.get('plain'))} | "
                     f"{show(cells.get('pgo'))} | {pct(g)} | "
                     f"{fmt(a and a['plain']['plan'])} / {fmt(a and a['pgo']['plan'])} | {pct(ga)} | "
                     f"{pct(a and (math.exp(statistics.mean(a['log_pairs']['plan'])) - 1) * 100)} |")
        summary["rows"].append({"workload": w, "size": size, "ops": ops,
                                "bench": {b: {"refimpl_us": c[0], "fastplan_us": c[1], "ratio": c[2]}
                                          for b, c in cells.items()},
                                "bench_all_paths": {b: bench[b][w].get(size) for b in ("plain", "pgo")},
                                "ab": a, "gain_bench_pct": g, "gain_ab_pct": ga})
lines.append("")
other = []
for path in ("search", "cache", "cache+launch"):
    gs = [gain(a["plain"][path], a["pgo"][path]) for a in ab.values()]
    if gs:
        other.append(f"{path} {statistics.median(gs):.1f} % ({min(gs):.1f} to {max(gs):.1f})")
if gains_bench:
    lines.append(f"PGO gain on plan(), bench: median {statistics.median(gains_bench):.1f} % "
                 f"({min(gains_bench):.1f} to {max(gains_bench):.1f})")
if gains_ab:
    lines.append(f"PGO gain on plan(), A/B: median {statistics.median(gains_ab):.1f} % "
                 f"({min(gains_ab):.1f} to {max(gains_ab):.1f})")
if other:
    lines.append("A/B, the other paths (medians): " + "; ".join(other))
for path in ("plan", "search", "cache", "cache+launch"):
    logs = [x for a in ab.values() for x in a["log_pairs"][path]]
    if len(logs) > 1:
        m, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
        line = (f"A/B pairs pooled, {path}: PGO gain {(math.exp(m) - 1) * 100:+.1f} % "
                f"(± {(math.exp(se) - 1) * 100:.1f} % standard error, {len(logs)} pairs, "
                f"spread of one pair ±{(math.exp(statistics.stdev(logs)) - 1) * 100:.0f} %)")
        summary.setdefault("ab_pooled", {})[path] = {"gain_pct": (math.exp(m) - 1) * 100,
                                                     "se_pct": (math.exp(se) - 1) * 100, "pairs": len(logs)}
        lines.append(line)
ratios = [(r["workload"], r["size"], b, c["ratio"]) for r in summary["rows"]
          for b, c in r["bench"].items() if c["ratio"] is not None]
if ratios:
    low = min(ratios, key=lambda t: t[3])
    lines.append(f"lowest plan() ratio to refimpl: {low[3]:.0f}× ({low[0]} {low[1]}, {low[2]} build): "
                 + ("fastplan ≥ 50× refimpl in every row" if low[3] >= 50 else "BELOW the 50× target"))
text = "\n".join(lines)
open(f"{out}/planner_pgo.md", "w").write(text + "\n")
json.dump(summary, open(f"{out}/planner_pgo.json", "w"), indent=1)
print(text)
PY
