"""The fuzzer's power on injected bugs: every mutant of ``fuselab.fuzz.mutants`` fuzzed in its
own process until the first finding (or the time limit), then shrunk.

burn counterpart: none. Per mutant: found or not, the time to the first finding (from the
campaign's start, worker start-up included), the check and symptom that found it, and the
shrunk repro's size in data ops. Then found / total, the share found within the limit, the
median time to find and the largest repro. Each mutant runs as
``fuselab fuzz --mutant NAME --time LIMIT --jobs JOBS --stop-on-first --planner ref --json``
with the mutant's own checks, ``--max-ops`` and devices; a mutant is applied in a fresh process
only, so none leaks into the next.

Usage::

    python3 bench/fuzz_mutants.py                      # every mutant, 60 s, 2 jobs
    python3 bench/fuzz_mutants.py --only signed-rem-lowering-off --limit 120
    python3 bench/fuzz_mutants.py --json OUT.json      # the rows as JSON too

Prints a Markdown table (the one in docs/benchmarks.md, "Fuzzer").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fuselab.fuzz.mutants import MUTANTS


def run_mutant(name: str, limit: float, jobs: int, seed: int, shrink: float) -> dict:
    mutant = MUTANTS[name]
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "fuselab", "fuzz", "--mutant", name,
                   "--time", f"{limit:g}s", "--jobs", str(jobs), "--seed", str(seed),
                   "--stop-on-first", "--planner", "ref", "--json", "--checks", *mutant.checks,
                   "--max-ops", str(mutant.max_ops), "--long-chains", str(mutant.long_chains),
                   "--device", *mutant.devices,
                   "--shrink-time", f"{shrink:g}", "--out", out]
        # the checkout first, then whatever the caller's path holds (e.g. carried wheels)
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.monotonic() - started
        replayed = None
        try:
            summary = json.loads(done.stdout)
        except json.JSONDecodeError:
            return {"mutant": name, "area": mutant.area, "found": False, "error":
                    (done.stderr.strip().splitlines() or ["no output"])[-1], "wall_s": wall}
        buckets = summary["buckets"]
        row = {"mutant": name, "area": mutant.area, "what": mutant.what,
               "found": bool(buckets), "streams": summary["streams"],
               "first_found_s": summary["first_found_s"], "wall_s": round(wall, 1)}
        if buckets:
            key, bucket = min(buckets.items(), key=lambda kv: kv[1].get("found_s") or 1e9)
            repro = bucket["repro"]
            row.update(bucket=key, ops_before=repro["ops_before"], ops_after=repro["ops_after"])
            directory = bucket.get("repro_dir")
            if directory:  # the repro fails again when replayed, with the mutant on
                again = subprocess.run([sys.executable, "-m", "fuselab", "fuzz", "--replay",
                                        directory], capture_output=True, text=True, env=env,
                                       cwd=ROOT)
                replayed = again.returncode == 1
        row["replay_fails"] = replayed
        return row


def table(rows: list[dict], limit: float) -> str:
    lines = ["| mutant | area | found | time to find (s) | repro ops | found by |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        found = "yes" if r["found"] else ("error: " + r["error"] if "error" in r else "no")
        when = f"{r['first_found_s']:.1f}" if r.get("first_found_s") is not None else "-"
        ops = f"{r['ops_after']} (from {r['ops_before']})" if "ops_after" in r else "-"
        by = " / ".join(r["bucket"].split(" | ")[:2]) if "bucket" in r else "-"
        lines.append(f"| `{r['mutant']}` | {r['area']} | {found} | {when} | {ops} | {by} |")
    found = [r for r in rows if r["found"]]
    times = [r["first_found_s"] for r in found if r.get("first_found_s") is not None]
    within = [t for t in times if t <= limit]
    sizes = [r["ops_after"] for r in found if "ops_after" in r]
    lines.append("")
    lines.append(f"found {len(found)} / {len(rows)} ({100 * len(within) / max(len(rows), 1):.0f} % "
                 f"within {limit:g} s); median time to find "
                 f"{statistics.median(times) if times else float('nan'):.1f} s; repros "
                 f"{max(sizes) if sizes else '-'} ops at most "
                 f"({sum(s <= 5 for s in sizes)} of {len(sizes)} at most 5 ops)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these mutants only")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per mutant")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shrink", type=float, default=30.0, help="shrink seconds")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    names = args.only or list(MUTANTS)
    rows = []
    for name in names:
        rows.append(run_mutant(name, args.limit, args.jobs, args.seed, args.shrink))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows, args.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
