"""The fuzzer's oracles, each a named check of one stream: ``plan``, ``launch``, ``interp``,
``gpu``, ``plan-space``, ``cache`` (and ``planner-cmd``, ``fuselab.fuzz.external``).

burn counterpart: none. A check returns ``None`` when the stream passes, else a ``Failure``
whose ``bucket`` groups it with the failures of the same bug: (check, symptom, fuser, close
reason, first diverging op).

* ``plan`` — refimpl's plan equals fastplan's (the dataclasses and the canonical JSON; a
  planner raising on a valid stream is a finding), and their steps agree under the case's
  first variant planning for another profile;
* ``launch`` — every launch refimpl's walk plans for refimpl's executed steps equals the one
  fastplan's compiled launch planner makes on the same memory: each binding's vector size,
  each block's ``FuseBlockConfig`` (reference layout, width, vector axis, ops) and config id,
  the aliases and the memory left behind (``fuselab.fuzz.launches``; what the plan JSON does
  not carry). Without the compiled twin there is no second planner: noted, not checked;
* ``interp`` — refimpl's plan run by the interpreter equals the eager oracle bit for bit;
* ``gpu`` — the same plan run on the WebGPU adapter agrees with the interpreter within the
  chained WGSL accuracy bounds (``gpu.check.agreement``), on the stream mapped to WGSL dtypes;
  run as a first run picks its tiers, then again with every element-wise block on its
  specialised kernel (``GPU_TIERS``) unless it ran there already;
* ``plan-space`` — other legal plans (``fuselab.fuzz.plans``) equal the eager oracle;
* ``cache`` — the stream replayed with new ids is served from the plan cache without a new
  search, with the steps a fresh planner gives the replay, and those steps compute the oracle's
  values.

A plan the interpreter refuses with a misaligned vector access is burn's own vectorization
finding (tests/differential/test_fusion_semantics.py) when fastplan's plan of the stream is
refused too: noted, not failed; a refusal fastplan's plan does not share is a finding.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselab.fuzz.launches import first_mismatch, twin_planner
from fuselab.fuzz.plans import Planners, variants_for
from fuselab.workloads import shifted
from refimpl.compare import exact
from refimpl.eager import run_stream
from refimpl.fused_kernel import KernelError
from refimpl.interpreter import Interpreter
from refimpl.ir import OperationIr
from refimpl.planner.stream.plan import Plan, plan_to_json
from refimpl.stream import Stream

__all__ = ["CHECKS", "DEFAULT_CHECKS", "Case", "Failure", "Harness", "run_checks"]

# The gpu check's tiers (``gpu.runtime.tiers``): what a first run picks (tier 0 for most
# element-wise blocks), then the blocks' specialised kernels, which a campaign would otherwise
# run only for a block seen before or one tier 0 cannot express.
GPU_TIERS = ("both", "specialised-only")
PLAN_SPACE_SAMPLE = 3  # variants tried per stream
VARIANT_PLAN_ITEMS = 40  # longer streams (the long chains) skip the plan check's variant
MISALIGNED = "misaligned vector"


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed check: its bucket's fields and a message for people."""

    check: str
    symptom: str
    fuser: str = "-"
    reason: str = "-"
    op: str = "-"
    detail: str = ""
    variant: str = "default"

    @property
    def bucket(self) -> str:
        return " | ".join((self.check, self.symptom, self.fuser, self.reason, self.op))

    def same_way(self, other: Failure | None) -> bool:
        """Whether ``other`` fails the way this does (what shrinking keeps)."""
        return other is not None and (other.check, other.symptom, other.variant) == \
            (self.check, self.symptom, self.variant)

    def to_json(self) -> dict:
        return {"check": self.check, "symptom": self.symptom, "fuser": self.fuser,
                "reason": self.reason, "op": self.op, "detail": self.detail,
                "variant": self.variant, "bucket": self.bucket}


@dataclass
class Case:
    """One stream under check, with the results the checks share."""

    stream: Stream
    device: str = "metal"
    variants: tuple[str, ...] = ()
    nonfinite: bool = False
    memo: dict = field(default_factory=dict)

    def eager(self) -> dict[int, np.ndarray]:
        if "eager" not in self.memo:
            self.memo["eager"] = run_stream(self.stream)
        return self.memo["eager"]


@dataclass
class Harness:
    """What the checks run with: the planner modules of the plan-space and cache checks, the
    GPU device (opened on first use), an external planner, and counters of notes."""

    planners: Planners = field(default_factory=Planners)
    external: Any = None
    notes: Counter = field(default_factory=Counter)
    seconds: Counter = field(default_factory=Counter)
    _gpu: Any = None

    def gpu(self) -> Any:
        if self._gpu is None:
            from gpu.runtime.device import default_device

            self._gpu = default_device()
        return self._gpu


# --- helpers --------------------------------------------------------------------------------


def differing(expected: dict, got: dict) -> list[int]:
    """Ids of the tensors that are missing, shaped differently or not bit-equal."""
    bad = sorted(set(expected) ^ set(got))
    for tid in sorted(set(expected) & set(got)):
        want, have = np.asarray(expected[tid]), np.asarray(got[tid])
        if want.shape != have.shape or want.dtype != have.dtype or \
                not exact({tid: want}, {tid: have}, None)[tid][0]:
            bad.append(tid)
    return sorted(bad)


def _producer(stream: Stream, tid: int) -> int | None:
    for index, item in enumerate(stream.items):
        if isinstance(item, OperationIr) and any(t.id == tid for t in item.outputs()):
            return index
    return None


def _step_of(executed: tuple, index: int | None) -> Any:
    for item in executed:
        if index in item.step.ops:
            return item
    return None


def _reason(planners: Planners, stream: Stream, variant: str, device: Any,
            index: int | None) -> str:
    """Why the fuser of the step holding op ``index`` closed (re-planned with recorders)."""
    reasons: dict[int, str] = {}
    try:
        planner, _ = planners.planner(variant, device, reasons)
        planner.run(stream)
    except Exception:  # noqa: BLE001 - the failure itself is reported by the check
        return "-"
    step = _step_of(tuple(planner.queue.executed), index)
    if step is None or step.optimization is None:
        return "-"
    return reasons.get(id(step.optimization), "-")


def located(check: str, symptom: str, stream: Stream, executed: tuple, index: int | None,
            planners: Planners, variant: str, device: Any, detail: str) -> Failure:
    """A failure whose bucket names op ``index``, its step's fuser and close reason."""
    step = _step_of(executed, index)
    fuser = "-" if step is None else (step.step.fuser or "unfused")
    reason = _reason(planners, stream, variant, device, index) if fuser not in ("-", "unfused") \
        else "-"
    op = "-" if index is None else stream.items[index].op.name
    return Failure(check, symptom, fuser, reason, op, detail, variant)


def run_steps(backend: Any, executed: tuple) -> tuple[dict | None, int | None, Exception | None]:
    """Run ``executed`` on ``backend`` step by step: (synced, None, None), or (None, the first
    op of the step that raised, the exception)."""
    for item in executed:
        try:
            backend.execute(item)
        except Exception as exc:  # noqa: BLE001 - any exception is a finding
            return None, (item.step.ops[0] if item.step.ops else None), exc
    try:
        return (backend.synced if hasattr(backend, "synced") else backend.results()), None, None
    except Exception as exc:  # noqa: BLE001 - a synced tensor never materialised
        return None, None, exc


def _twin_runs(stream: Stream, variant: str, device: str) -> bool:
    """Whether fastplan's plan of ``stream`` runs on the interpreter: a misaligned refusal it
    shares is burn's own vectorization finding, one it does not share is a planner bug."""
    try:
        profile, executed = Planners("fast").executed(stream, variant, device)
        Interpreter(stream, profile).run(executed)
    except Exception:  # noqa: BLE001
        return False
    return True


def _values_check(check: str, case: Case, h: Harness, profile: Any, executed: tuple,
                  variant: str, stream: Stream | None = None,
                  expected: dict | None = None) -> Failure | None:
    """Interpret ``executed`` and compare with the eager oracle, bit for bit."""
    stream = stream if stream is not None else case.stream
    expected = expected if expected is not None else case.eager()
    got, index, exc = run_steps(Interpreter(stream, profile), executed)
    if exc is not None:
        if isinstance(exc, KernelError) and MISALIGNED in str(exc):
            if not _twin_runs(stream, variant, case.device):
                h.notes[f"{check}: burn plan refused (misaligned vector)"] += 1
                return None
            return located(check, "refused (misaligned vector)", stream, executed, index,
                           h.planners, variant, case.device, f"{variant}: {exc}; fastplan's "
                           "plan of the stream runs")
        return located(check, f"raised {type(exc).__name__}", stream, executed, index,
                       h.planners, variant, case.device, f"{variant}: {exc}")
    bad = differing(expected, got)
    if not bad:
        return None
    index = min((_producer(stream, t) for t in bad), key=lambda i: -1 if i is None else i)
    return located(check, "mismatch", stream, executed, index, h.planners, variant,
                   case.device, f"{variant}: tensors {bad} differ from eager")


# --- the checks -----------------------------------------------------------------------------


def _reference(case: Case, h: Harness) -> tuple:
    """refimpl's planner on the case: (profile, executed steps, launch-planned Plan)."""
    if "reference" not in case.memo:
        ref = Planners("ref")
        planner, profile = ref.planner("default", case.device)
        planner.run(case.stream)
        steps = planner.launch_planned(case.stream, 0, profile)
        case.memo["reference"] = (profile, tuple(planner.queue.executed),
                                  Plan(profile.name, steps))
    return case.memo["reference"]


def check_plan(case: Case, h: Harness) -> Failure | None:
    import fastplan

    try:
        expected = _reference(case, h)[2]
    except Exception as exc:  # noqa: BLE001
        return Failure("plan", f"refimpl raised {type(exc).__name__}", detail=str(exc))
    try:
        actual = fastplan.plan(case.stream, case.device)
    except Exception as exc:  # noqa: BLE001
        return Failure("plan", f"fastplan raised {type(exc).__name__}", detail=str(exc))
    if actual == expected and plan_to_json(actual) == plan_to_json(expected):
        return _variant_plans(case)
    first = next((k for k, (a, b) in enumerate(zip(actual.steps, expected.steps)) if a != b),
                 min(len(actual.steps), len(expected.steps)))
    step = expected.steps[first] if first < len(expected.steps) else None
    index = step.ops[0] if step is not None and step.ops else None
    return Failure("plan", "plans differ", (step.fuser or "unfused") if step else "-", "-",
                   "-" if index is None else case.stream.items[index].op.name,
                   f"step {first}: refimpl {step}, fastplan "
                   f"{actual.steps[first] if first < len(actual.steps) else None}")


def _variant_plans(case: Case) -> Failure | None:
    """refimpl's steps equal fastplan's under the case's first variant that plans for
    another profile (the other variants wrap the same fusers on both sides)."""
    variant = next((v for v in case.variants if v.startswith(("device:", "bindings:"))), None)
    if variant is None or len(case.stream.items) > VARIANT_PLAN_ITEMS:
        return None
    steps = []
    for impl in ("ref", "fast"):
        try:
            planner, _ = Planners(impl).planner(variant, case.device)
            steps.append(planner.run(case.stream))
        except Exception as exc:  # noqa: BLE001
            steps.append(f"raised {type(exc).__name__}")
    if steps[0] == steps[1]:
        return None
    ref, fast = steps
    if isinstance(ref, str) or isinstance(fast, str):
        return Failure("plan", f"refimpl {ref if isinstance(ref, str) else 'planned'}, "
                       f"fastplan {fast if isinstance(fast, str) else 'planned'}",
                       detail=variant, variant=variant)
    first = next((k for k, (a, b) in enumerate(zip(ref, fast)) if a != b),
                 min(len(ref), len(fast)))
    step = ref[first] if first < len(ref) else None
    index = step.ops[0] if step is not None and step.ops else None
    return Failure("plan", "plans differ", (step.fuser or "unfused") if step else "-", "-",
                   "-" if index is None else case.stream.items[index].op.name,
                   f"{variant}: step {first}: refimpl {step}, fastplan "
                   f"{fast[first] if first < len(fast) else None}", variant)


def check_launch(case: Case, h: Harness) -> Failure | None:
    twin = twin_planner()
    if twin is None:
        h.notes["launch: fastplan is not compiled (no second launch planner)"] += 1
        return None
    try:
        profile, executed, _ = _reference(case, h)
    except Exception as exc:  # noqa: BLE001
        return Failure("launch", f"refimpl raised {type(exc).__name__}", detail=str(exc))
    found = first_mismatch(case.stream, executed, profile, twin)
    if found is None:
        return None
    ops = executed[found.step].step.ops
    return located("launch", found.symptom, case.stream, executed, ops[0] if ops else None,
                   h.planners, "default", case.device, found.detail)


def check_interp(case: Case, h: Harness) -> Failure | None:
    profile, executed, _ = _reference(case, h)
    return _values_check("interp", case, h, profile, executed, "default")


def check_plan_space(case: Case, h: Harness) -> Failure | None:
    for variant in case.variants or variants_for(case.device):
        try:
            profile, executed = h.planners.executed(case.stream, variant, case.device)
        except Exception as exc:  # noqa: BLE001
            return Failure("plan-space", f"planner raised {type(exc).__name__}",
                           detail=f"{variant}: {exc}", variant=variant)
        failure = _values_check("plan-space", case, h, profile, executed, variant)
        if failure is not None:
            return failure
    return None


def check_cache(case: Case, h: Harness) -> Failure | None:
    planner, profile = h.planners.planner("default", case.device)
    planner.run(case.stream)
    explored, done = planner.num_explorations, len(planner.queue.executed)
    offset = 1 + max([*case.stream.inputs, *(t.id for op in case.stream.ops
                                            for t in op.nodes())], default=0)
    replay = shifted(case.stream, offset)
    steps = planner.run(replay)
    fresh, _ = h.planners.planner("default", case.device)
    expected_steps = fresh.run(replay)
    if steps != expected_steps:
        first = next((k for k, (a, b) in enumerate(zip(steps, expected_steps)) if a != b), 0)
        return Failure("cache", "cached plan differs", detail=f"step {first}: cached "
                       f"{steps[first] if first < len(steps) else None}, fresh "
                       f"{expected_steps[first] if first < len(expected_steps) else None}")
    if planner.num_explorations > explored:
        return Failure("cache", "cache miss", detail=f"the replay ran "
                       f"{planner.num_explorations - explored} new search(es)")
    expected = {tid + offset: v for tid, v in case.eager().items()}
    return _values_check("cache", case, h, profile, tuple(planner.queue.executed[done:]),
                         "default", replay, expected)


def check_gpu(case: Case, h: Harness) -> Failure | None:
    from gpu.check.agreement import compare, wgsl_stream
    from gpu.runtime.executor import GpuExecutor
    from gpu.runtime.tiers import use_tiers

    device = h.gpu()
    stream = wgsl_stream(case.stream, device.has_f16)
    profile = device.profile()
    ref = Planners("ref")
    executed = _gpu_steps(stream, profile)
    expected, _, exc = run_steps(Interpreter(stream, profile), executed)
    if exc is not None:
        h.notes[f"gpu: interpreter refused ({str(exc).split(':')[0]})"] += 1
        return None
    for mode in GPU_TIERS:
        with use_tiers(mode):
            executor = GpuExecutor(stream, device, profile)
            got, index, exc = run_steps(executor, executed)
        symptom = "" if mode == GPU_TIERS[0] else " (specialised kernel)"
        if exc is not None:
            return located("gpu", f"raised {type(exc).__name__}{symptom}", stream, executed,
                           index, ref, "default", profile,
                           str(exc).splitlines()[0] if str(exc) else "")
        agreement = compare(stream, expected, got, nonfinite=case.nonfinite)
        if not agreement.ok:
            bad = [t.tensor for t in agreement.tensors if not t.ok]
            index = min((_producer(stream, t) for t in bad),
                        key=lambda i: -1 if i is None else i)
            return located("gpu", f"mismatch{symptom}", stream, executed, index, ref,
                           "default", profile, agreement.summary().splitlines()[0])
        if "tier 0" not in (t for r in executor.records for t in r.tiers):
            break  # every block already ran its specialised kernel
    return None


def _gpu_steps(stream: Stream, profile: Any) -> tuple:
    from refimpl.planner import executed_steps

    return executed_steps(stream, profile)[1]


Check = Callable[[Case, Harness], Failure | None]
CHECKS: dict[str, Check] = {
    "plan": check_plan,
    "launch": check_launch,
    "interp": check_interp,
    "gpu": check_gpu,
    "plan-space": check_plan_space,
    "cache": check_cache,
}
DEFAULT_CHECKS = ("plan", "launch", "interp", "plan-space", "cache")


def run_checks(case: Case, h: Harness, checks: tuple[str, ...]) -> Failure | None:
    """The first failure of ``checks`` on ``case`` (a check that crashes is a failure)."""
    for name in checks:
        start = time.perf_counter()
        try:
            failure = CHECKS[name](case, h)
        except Exception as exc:  # noqa: BLE001 - the harness reports, never crashes
            failure = Failure(name, f"raised {type(exc).__name__}", detail=str(exc))
        h.seconds[name] += time.perf_counter() - start
        if failure is not None:
            return failure
    return None
