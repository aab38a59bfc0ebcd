"""The demo's fuzzer section: a short campaign through the oracles, then the seed page's own
burn bug put back into refimpl's planner and found, shrunk and replayed by the fuzzer.

burn counterpart: none (``fuselab.fuzz`` has none). The injected bug is burn #6049: a block's
first op skipping the binding check (section "The binding limit applies to the first op
too"). It runs as ``fuselab fuzz --mutant first-op-bindings-unchecked`` in a child process, the
only way a mutant is ever switched on; this process's planner stays the shipped one, and the
same check passes here on the repro it leaves (``fuselab fuzz --replay`` would switch the
mutant on again, to show the repro still fails with it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import fastplan
from fuselab.fuzz import Config, fuzz
from fuselab.fuzz.campaign import check_case
from fuselab.fuzz.repro import load_repro

__all__ = ["fuzz_section", "CAMPAIGN", "MUTANT"]

CAMPAIGN = Config(seed=0, count=60, checks=("plan", "launch", "interp", "plan-space", "cache"))
MUTANT, MUTANT_STREAMS = "first-op-bindings-unchecked", 400


def _mutant_run(out: Path) -> tuple[int, dict]:
    """``fuselab fuzz --mutant`` until its first finding; (exit status, summary)."""
    command = [sys.executable, "-m", "fuselab", "fuzz", "--mutant", MUTANT, "--seed", "0",
               "--count", str(MUTANT_STREAMS), "--stop-on-first", "--checks", "plan", "interp",
               "--planner", "ref", "--device", "webgpu-default", "--shrink-time", "20",
               "--json", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, {"error": (done.stderr or done.stdout)[-300:]}


def fuzz_section(report) -> None:
    report.section("The fuzzer: random streams through every oracle; burn #6049 put back, "
                   "found and shrunk")
    started = time.perf_counter()
    summary = fuzz(CAMPAIGN)
    fusers = sorted(k for k, v in summary.coverage.get("ops", {}).items() if v)
    report.say(f"    fuselab fuzz --count {CAMPAIGN.count} --seed {CAMPAIGN.seed} --checks "
               f"{' '.join(CAMPAIGN.checks)}: {summary.streams} streams in "
               f"{time.perf_counter() - started:.1f} s, op kinds drawn: {', '.join(fusers)}")
    report.check("ref plan == fast plan, ref launches == fast launches, interp == eager bit "
                 "for bit, every forced plan computes the same values, the plan cache "
                 "replays: no finding",
                 summary.streams == CAMPAIGN.count and summary.found == 0,
                 ", ".join(summary.buckets) if summary.buckets else "")
    if not fastplan.COMPILED:  # fastplan then runs refimpl's modules, the mutant's too
        report.say("    [skip] the injected bug: fastplan is not compiled, so no planner "
                   "independent of refimpl's checks it (`make build` builds it)")
        return
    with tempfile.TemporaryDirectory(prefix="fuselab-demo-fuzz-") as tmp:
        started = time.perf_counter()
        status, result = _mutant_run(Path(tmp))
        buckets = result.get("buckets", {})
        report.say(f"    fuselab fuzz --mutant {MUTANT} (the binding check skips a block's "
                   f"first op): {time.perf_counter() - started:.1f} s")
        found = status == 1 and len(buckets) == 1
        report.check(f"found within {MUTANT_STREAMS} streams, exit status 1", found,
                     "" if found else str(result.get("error", buckets))[:200])
        if not found:
            return
        bucket = next(iter(buckets.values()))
        shrunk = bucket["repro"]
        report.say(f"    stream {bucket['index']}: {bucket['failure']['bucket']}")
        report.check("shrunk to a repro of at most 5 ops",
                     shrunk["ops_after"] <= 5,
                     f"{shrunk['ops_before']} ops -> {shrunk['ops_after']}")
        _, meta, case = load_repro(bucket["repro_dir"])
        failure = check_case(case, replace(CAMPAIGN, checks=(meta["check"],)))
        report.check(f"the {meta['check']} check passes on its repro with the shipped planner",
                     failure is None, "" if failure is None else failure.detail)
