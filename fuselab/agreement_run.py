"""The big agreement run: N random streams, GPU executor vs interpreter, tallied by class.

    python fuselab/agreement_run.py [--streams 2000] [--out DIR] [--seed 0] [--max-ops 10]
                                    [--time-limit SECONDS]

burn counterpart: none. The streams are drawn by hypothesis from
``refimpl.strategies.streams`` (generation only: no shrinking, no example database, a fixed
``--seed``), mapped onto WGSL's dtypes (``gpu.check.agreement.wgsl_stream``), planned once for
the adapter's profile, run by ``refimpl.interpreter.Interpreter`` and
``gpu.runtime.executor.GpuExecutor`` over the same executed steps and compared within the
chained accuracy bounds (``gpu.check.agreement.compare``), as
``tests/differential/test_gpu_vs_interp.py`` does. Nothing stops the run: each stream gets one
outcome,

* ``agree`` — every synced tensor within its bound (elements in the documented classes,
  non-finite / unbounded / interpreter ≠ eager, are counted beside it);
* ``both refused`` — the interpreter and the GPU refuse the launch the same way
  (``KernelError``); ``interpreter refused, gpu agrees with eager`` — the GPU ran a path the
  interpreter refused and matches the eager oracle;
* ``mismatch`` — some element outside its bound, classed by the op that produced the tensor
  and its dtype; ``gpu error`` / ``interpreter error`` / ``planner error`` — an exception,
  classed by its type and message head.

The JSON report (``DIR/agreement.json``) holds the adapter, the counts per outcome and class,
element tallies, the ops covered, the wall time, and up to five reproducing streams per
disagreement class; it is rewritten every 250 streams so a run cut short still reports.
``--time-limit`` stops drawing new work after that many seconds (the streams left are
counted as ``not run``). A short summary is printed last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from refimpl.eager import run_stream  # noqa: E402
from refimpl.fused_kernel import KernelError  # noqa: E402
from refimpl.interpreter import Interpreter  # noqa: E402
from refimpl.ir import OperationIr  # noqa: E402
from refimpl.planner import executed_steps  # noqa: E402
from refimpl.strategies import streams  # noqa: E402
from refimpl.stream import Stream  # noqa: E402
from gpu.check.agreement import compare, wgsl_stream  # noqa: E402
from gpu.runtime.device import default_device  # noqa: E402
from gpu.runtime.executor import GpuExecutor  # noqa: E402

__all__ = ["AgreementRun", "main", "run_one"]

_KEEP = 5  # reproducing streams kept per disagreement class
_CHECKPOINT = 250
AGREE = ("agree", "both refused", "interpreter refused, gpu agrees with eager")


def _head(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).split(':')[0][:80]}"


def _producer(stream: Stream, tensor: int) -> str:
    for item in stream.items:
        if isinstance(item, OperationIr) and any(t.id == tensor for t in item.outputs()):
            out = next(t for t in item.outputs() if t.id == tensor)
            return f"{item.name} -> {out.dtype.value}"
    return "input"


def run_one(stream: Stream, device: Any) -> tuple[str, str, dict[str, int]]:
    """One stream (already WGSL-mapped): ``(outcome, class, element tallies)``."""
    try:
        profile, executed = executed_steps(stream, device.profile())
    except Exception as exc:  # noqa: BLE001 - every failure is a tallied outcome
        return "planner error", _head(exc), {}
    refused = None
    try:
        expected = Interpreter(stream, profile).run(executed)
    except KernelError as exc:
        refused = str(exc).split(":")[0]
    except Exception as exc:  # noqa: BLE001
        return "interpreter error", _head(exc), {}
    try:
        got = GpuExecutor(stream, device, profile).run(executed)
    except KernelError as exc:
        if refused is not None and str(exc).split(":")[0] == refused:
            return "both refused", refused, {}
        return "gpu error", _head(exc), {}
    except Exception as exc:  # noqa: BLE001
        return "gpu error", _head(exc), {}
    if refused is not None:
        expected = run_stream(stream)
    agreement = compare(stream, expected, got, nonfinite=True)
    tallies = {"elements": sum(t.elements for t in agreement.tensors),
               "mismatched": sum(t.mismatched for t in agreement.tensors),
               "nonfinite": sum(t.nonfinite for t in agreement.tensors),
               "nonfinite_differ": sum(t.nonfinite_differ for t in agreement.tensors),
               "unbounded": sum(t.unbounded for t in agreement.tensors),
               "divergent": sum(t.divergent for t in agreement.tensors)}
    if agreement.ok:
        outcome = "agree" if refused is None else "interpreter refused, gpu agrees with eager"
        return outcome, refused or "", tallies
    bad = sorted({_producer(stream, t.tensor) for t in agreement.tensors if not t.ok})
    return "mismatch", "; ".join(bad), tallies


class AgreementRun:
    """Tallies of one run; ``to_dict`` is the JSON report."""

    def __init__(self, device: Any, args: argparse.Namespace) -> None:
        self.device, self.args = device, args
        self.started = time.perf_counter()
        self.outcomes: Counter[str] = Counter()
        self.classes: Counter[tuple[str, str]] = Counter()
        self.elements: Counter[str] = Counter()
        self.ops: Counter[str] = Counter()
        self.examples: dict[str, list[dict]] = {}
        self.not_run = 0

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def done(self) -> int:
        return sum(self.outcomes.values())

    def add(self, stream: Stream) -> None:
        if self.args.time_limit and self.elapsed > self.args.time_limit:
            self.not_run += 1
            return
        mapped = wgsl_stream(stream, self.device.has_f16)
        outcome, cls, tallies = run_one(mapped, self.device)
        self.outcomes[outcome] += 1
        self.classes[(outcome, cls)] += 1
        self.elements.update(tallies)
        self.ops.update(item.name for item in mapped.items if isinstance(item, OperationIr))
        if outcome not in AGREE:
            kept = self.examples.setdefault(f"{outcome}: {cls}", [])
            if len(kept) < _KEEP:
                kept.append(json.loads(mapped.to_json()))
        if self.done % _CHECKPOINT == 0:
            self.write()
            print(f"  {self.done} streams, {self.elapsed:.0f} s: {dict(self.outcomes)}",
                  flush=True)

    def to_dict(self) -> dict[str, Any]:
        disagreeing = self.done - sum(self.outcomes[o] for o in AGREE)
        return {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": "python fuselab/agreement_run.py " + " ".join(self.args.argv),
            "adapter": {"summary": self.device.summary(), **self.device.info()},
            "streams_asked": self.args.streams, "streams_run": self.done,
            "not_run": self.not_run, "disagreeing": disagreeing,
            "seconds": self.elapsed, "seed": self.args.seed, "max_ops": self.args.max_ops,
            "outcomes": dict(sorted(self.outcomes.items())),
            "classes": [{"outcome": o, "class": c, "streams": n}
                        for (o, c), n in sorted(self.classes.items())],
            "elements": dict(sorted(self.elements.items())),
            "ops_covered": dict(sorted(self.ops.items())),
            "disagreement_examples": self.examples,
        }

    def write(self) -> None:
        out = Path(self.args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "agreement.json").write_text(json.dumps(self.to_dict(), indent=1))

    def summary(self) -> str:
        lines = [f"adapter: {self.device.summary()}",
                 f"{self.done} streams in {self.elapsed:.0f} s (asked {self.args.streams}, "
                 f"not run {self.not_run}): " + ", ".join(
                     f"{o} {n}" for o, n in sorted(self.outcomes.items()))]
        for (outcome, cls), n in sorted(self.classes.items()):
            if outcome not in AGREE:
                lines.append(f"  {outcome}: {cls} ({n})")
        e = self.elements
        lines.append(f"elements: {e['elements']} compared, {e['mismatched']} outside bounds, "
                     f"{e['nonfinite']} non-finite ({e['nonfinite_differ']} differ), "
                     f"{e['unbounded']} unbounded, {e['divergent']} interpreter != eager")
        return "\n".join(lines)


def drive(run: AgreementRun) -> None:
    """Feed ``run`` ``--streams`` streams drawn by hypothesis (generation phase only)."""
    args = run.args

    @seed(args.seed)
    @settings(max_examples=args.streams, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(stream=streams(max_ops=args.max_ops))
    def feed(stream: Stream) -> None:
        run.add(stream)

    feed()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=2000, help="streams to draw")
    parser.add_argument("--out", default="agreement-out", help="folder for agreement.json")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed")
    parser.add_argument("--max-ops", type=int, default=10, help="ops per stream at most")
    parser.add_argument("--time-limit", type=float, default=0.0,
                        help="stop running new streams after this many seconds (0: never)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)

    run = AgreementRun(default_device(), args)
    drive(run)
    run.write()
    print(run.summary())
    return 0 if run.to_dict()["disagreeing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
