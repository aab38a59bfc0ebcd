#!/usr/bin/env bash
# The planner figures of docs/benchmarks.md, measured on a GPU machine's CPU (16 cores), each
# phase in one command:
#
#   export FASTPLAN_PGO=1; source .device/prelude.sh && bash bench/planner_device.sh bench
#                                 # benchmark, then the split and bench/planner_faults.py
#   ... PLANNER_WORKLOADS=mixed bash bench/planner_device.sh bench-100k  # refimpl at 100k too
#   ... bash bench/planner_device.sh check                # equality at depth, 1M fuzz
#   ... planner_device.sh equality, then ... planner_device.sh fuzz      # the same as two calls
#
# Results go under $OUT (a temporary folder without it); the tables are printed last.
# PLANNER_SIZES, PLANNER_SPLIT_SIZE and PLANNER_FUZZ_COUNT shrink a run (a quick try here).
# `bench`: the three workloads of bench/planner.py one after another (one process at a time:
# processes side by side move each other's rows), then bench/planner_split.py. refimpl is
# skipped where one run of its five paths would take over 100 s (elementwise and mixed at
# 100k); `bench-100k` runs it there, one run (mixed alone takes about 5 minutes: give the
# workloads as two commands, PLANNER_WORKLOADS=mixed, then elementwise,transformer).
# `check`: the plan-equality property at the thorough profile (15 000 examples) for
# hypothesis seeds 1 and 2, beside tools/fuzz_planners.py on 1 000 000 generated inputs (the
# cores the two leave; `fuzz` alone: every core).
# `pgo-ab`: the profile-guided build against a plain build of the same tree (a copy under
# /tmp), the two taking turns (bench/planner_ab.py, PLANNER_SIZES, 7 rounds).
# `tree-ab`: this tree against an earlier one, both profile-guided, in turns: PLANNER_AB_BASE
# names a folder inside this tree that holds the earlier tree's files (carried with it), e.g.
#   mkdir ab-base && git archive BASE | tar -x -C ab-base    # here, before the device call
# Every phase first makes the tree's build the one `make build` gives a user, the profile-guided
# one (setup.py's FASTPLAN_PGO; a no-op when it already is): with `export FASTPLAN_PGO=1`
# before the prelude, the prelude's own build is that one.
set -euo pipefail
out=${OUT:-$(mktemp -d)}
phase=${1:-bench}
sizes=${PLANNER_SIZES:-1000,10000,100000}  # smaller for a quick try elsewhere
split_size=${PLANNER_SPLIT_SIZE:-10000}
workloads=${PLANNER_WORKLOADS:-elementwise,transformer,mixed}  # bench-100k's
fuzz_count=${PLANNER_FUZZ_COUNT:-1000000}
# the machine, so that runs on different machines can be told apart (load included; the
# interpreter's build too, which moves refimpl's speed more than fastplan's)
machine() {
    echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
        "$(python3 --version) ($(python3 -c 'from fuselab.bench import interpreter_build as b; print(b())'))," \
        "load $(cut -d' ' -f1-3 /proc/loadavg)"
}
case "$phase" in
bench|bench-100k|check|equality|fuzz|pgo-ab|tree-ab) ;;
*)
    echo "usage: bench/planner_device.sh bench|bench-100k|check|equality|fuzz|pgo-ab|tree-ab" >&2
    exit 2
    ;;
esac
FASTPLAN_PGO=1 python3 setup.py -q build_ext --inplace > "$out/build_ext.log" 2>&1 || {
    echo "planner_device: the profile-guided build failed:"; tail -20 "$out/build_ext.log"; exit 1; }
case "$phase" in
bench)
    machine > "$out/machine.txt"
    for w in elementwise transformer mixed; do
        python3 bench/planner.py --workload "$w" --sizes "$sizes" --repeats 3 --ref-budget 100 --json \
            > "$out/planner-$w.json" 2> "$out/planner-$w.log"
    done
    python3 bench/planner_split.py --size "$split_size" --repeats 5 > "$out/split.md"
    # fastplan's plan() alone on this machine (system time, faults): runs on different
    # machines compare through it
    python3 bench/planner_faults.py > "$out/faults.txt"
    python3 - "$out" <<'PY'
import json, sys
from fuselab.bench import Row, table
rows = []
for w in ("elementwise", "transformer", "mixed"):
    for r in json.load(open(f"{sys.argv[1]}/planner-{w}.json")):
        rows.append(Row(**{k: v for k, v in r.items() if k != "ratio"}))
print(table(rows))
PY
    cat "$out/split.md"
    cat "$out/faults.txt"
    machine >> "$out/machine.txt"
    cat "$out/machine.txt"
    ;;
bench-100k)
    machine > "$out/machine.txt"
    for w in ${workloads//,/ }; do
        python3 bench/planner.py --workload "$w" --sizes 100000 --repeats 1 --json \
            > "$out/planner-$w-100k.json" 2> "$out/planner-$w-100k.log"
    done
    python3 - "$out" ${workloads//,/ } <<'PY'
import json, sys
from fuselab.bench import Row, table
rows = [Row(**{k: v for k, v in r.items() if k != "ratio"})
        for w in sys.argv[2:] for r in json.load(open(f"{sys.argv[1]}/planner-{w}-100k.json"))]
print(table(rows))
PY
    machine >> "$out/machine.txt"
    cat "$out/machine.txt"
    ;;
check|equality|fuzz)
    # check: both side by side (the fuzzer on the cores the two equality runs leave). On a
    # slow machine they can outlast one device call (600 s): run `equality`, then `fuzz`
    # (every core), as two calls.
    machine
    jobs=$(nproc)
    if [ "$phase" != fuzz ]; then
        for seed in 1 2; do
            HYPOTHESIS_PROFILE=thorough python3 -m pytest -q -p no:cacheprovider \
                "tests/differential/test_plan_equivalence.py::test_fastplan_plan_matches_refimpl" \
                --hypothesis-seed=$seed --hypothesis-show-statistics > "$out/equality-$seed.txt" 2>&1 &
        done
        jobs=$((jobs > 3 ? jobs - 2 : 1))
    fi
    if [ "$phase" != equality ]; then
        python3 tools/fuzz_planners.py --count "$fuzz_count" --jobs "$jobs" --progress plain \
            --out "$out/fuzz" > "$out/fuzz.txt" 2>&1 || true
    fi
    wait || true
    if [ "$phase" != fuzz ]; then
        for seed in 1 2; do
            grep -E "passed|failed|Stopped because|max_examples" "$out/equality-$seed.txt" | tail -3
        done
    fi
    [ "$phase" = equality ] || tail -3 "$out/fuzz.txt"
    ;;
pgo-ab|tree-ab)
    machine
    other=$(mktemp -d)  # the same tree built the other way, or (tree-ab) the earlier tree
    if [ "$phase" = tree-ab ]; then
        base=${PLANNER_AB_BASE:?tree-ab needs PLANNER_AB_BASE: a folder holding the earlier tree}
        (cd "$base" && cp -r setup.py pyproject.toml fastplan refimpl gpu bench tools tests "$other"/)
    else
        cp -r setup.py pyproject.toml fastplan refimpl gpu bench tools tests "$other"/
    fi
    rm -f "$other"/fastplan/*.so
    if [ "$phase" = pgo-ab ]; then
        how=(FASTPLAN_PGO=0)
    else
        how=(FASTPLAN_PGO=1)
    fi
    (cd "$other" && env "${how[@]}" FASTPLAN_REQUIRE_EXTENSIONS=1 python3 setup.py -q build_ext \
        --inplace > "$out/$phase-build.log" 2>&1)
    for size in ${sizes//,/ }; do
        python3 bench/planner_ab.py --workload elementwise --workload transformer \
            --workload mixed --size "$size" --rounds 7 "$other" "$PWD" | tee "$out/$phase-$size.md"
    done
    machine
    ;;
esac
