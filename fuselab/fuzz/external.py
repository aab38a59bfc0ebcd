"""Porters' conformance: ``fuselab fuzz --planner-cmd CMD`` checks an external planner (another
language's port) as a subprocess, the ``planner-cmd`` check.

burn counterpart: none. The protocol: the command gets one stream JSON (SPEC's stream
format) on stdin and the device profile's name in the environment variable
``FUSELAB_DEVICE``; it writes one plan JSON (SPEC's plan format, ``fuselab plan``'s output)
on stdout and exits 0. Each call has a time limit (``ExternalPlanner.timeout``).

What the check fails on, each with its own symptom (never a crash of the fuzzer):

* ``hang`` — no answer within the time limit (the process is killed);
* ``crash`` — a non-zero exit or death by a signal (the detail holds stderr's last line);
* ``not JSON`` / ``wrong schema`` — stdout is not a plan document (the parser's message,
  naming the field);
* ``wrong device`` — the plan names another device than ``FUSELAB_DEVICE``;
* ``skips ops`` / ``repeats ops`` / ``unknown ops`` — the steps do not cover every op of the
  stream exactly once;
* ``plans differ`` — the plan is not refimpl's (the first differing step in the detail);
* ``mismatch`` — refimpl's plan, run by the interpreter, differs from the eager oracle (a
  conforming port's plan computes what refimpl's does).

The golden corpus (``tests/golden/streams``) is checked first (``golden_corpus``).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fuselab.fuzz.checks import CHECKS, Case, Failure, Harness, check_interp
from refimpl.ir import Sync
from refimpl.planner.stream.plan import PlanFormatError, plan_from_json
from refimpl.stream import Stream, load_stream, stream_to_json

__all__ = ["GOLDEN", "ExternalPlanner", "check_planner_cmd", "golden_corpus"]

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "streams"


@dataclass
class ExternalPlanner:
    """An external planner command and its time limit per call, in seconds."""

    command: str
    timeout: float = 10.0
    last_output: str | None = None

    def call(self, stream: Stream, device: str) -> tuple[str | None, Failure | None]:
        """Its stdout, or the failure of the call itself."""
        env = {**os.environ, "FUSELAB_DEVICE": device}
        self.last_output = None
        try:
            process = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       env=env, start_new_session=True)
        except OSError as exc:
            return None, Failure("planner-cmd", "crash", detail=f"cannot start "
                                 f"{self.command!r}: {exc.strerror or exc}")
        try:
            out, err = process.communicate(stream_to_json(stream).encode(),
                                           timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None, Failure("planner-cmd", "hang", detail=f"no plan within "
                                 f"{self.timeout:g} s (killed)")
        if process.returncode != 0:
            code = process.returncode
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            lines = err.decode(errors="replace").strip().splitlines()
            return None, Failure("planner-cmd", "crash", detail=f"{how}" + (
                f": {lines[-1]}" if lines else ""))
        self.last_output = out.decode(errors="replace")
        return self.last_output, None


def _coverage(stream: Stream, plan) -> Failure | None:
    wanted = [k for k, item in enumerate(stream.items) if not isinstance(item, Sync)]
    seen = [k for step in plan.steps for k in step.ops]
    unknown = sorted(set(seen) - set(wanted))
    if unknown:
        return Failure("planner-cmd", "unknown ops", detail=f"steps name ops {unknown}, "
                       "which are syncs or past the end of the stream")
    repeated = sorted({k for k in seen if seen.count(k) > 1})
    if repeated:
        return Failure("planner-cmd", "repeats ops", detail=f"ops {repeated} are in more "
                       "than one step")
    missing = sorted(set(wanted) - set(seen))
    if missing:
        return Failure("planner-cmd", "skips ops", detail=f"ops {missing} are in no step")
    return None


def check_planner_cmd(case: Case, h: Harness) -> Failure | None:
    """The external planner's plan for ``case`` against refimpl's (module docstring)."""
    from fuselab.fuzz.checks import _reference

    external: ExternalPlanner = h.external
    text, failure = external.call(case.stream, case.device)
    if failure is not None:
        return failure
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.strip().splitlines()[0][:80] if text.strip() else "(empty)"
        return Failure("planner-cmd", "not JSON", detail=f"stdout is not JSON ({exc.msg} at "
                       f"line {exc.lineno}): {head!r}")
    try:
        plan = plan_from_json(text)
    except (PlanFormatError, ValueError, TypeError, KeyError) as exc:
        return Failure("planner-cmd", "wrong schema", detail=f"not a plan document: {exc}")
    if plan.device != case.device:
        return Failure("planner-cmd", "wrong device", detail=f"the plan is for "
                       f"{plan.device!r}, FUSELAB_DEVICE was {case.device!r}")
    failure = _coverage(case.stream, plan)
    if failure is not None:
        return failure
    _, _, expected = _reference(case, h)
    if plan != expected:
        first = next((k for k, (a, b) in enumerate(zip(plan.steps, expected.steps))
                      if a != b), min(len(plan.steps), len(expected.steps)))
        step = expected.steps[first] if first < len(expected.steps) else None
        index = step.ops[0] if step is not None and step.ops else None
        return Failure("planner-cmd", "plans differ",
                       (step.fuser or "unfused") if step else "-", "-",
                       "-" if index is None else case.stream.items[index].op.name,
                       f"step {first}: refimpl {step}, external "
                       f"{plan.steps[first] if first < len(plan.steps) else None}")
    failure = check_interp(case, h)
    return None if failure is None else Failure("planner-cmd", failure.symptom, failure.fuser,
                                                failure.reason, failure.op, failure.detail)


CHECKS["planner-cmd"] = check_planner_cmd


def golden_corpus() -> list[tuple[str, Stream]]:
    """The golden streams, by file name (the corpus a conformance run starts with)."""
    return [(path.stem, load_stream(path)) for path in sorted(GOLDEN.glob("*.json"))]
