"""``fuselab demo``: the seed page (burn 0.22.1, "生成融合内核"), run live.

burn counterpart: none; this is the seed page's experiments, each re-run here from a stream the
lazy frontend records, planned by refimpl's planner, executed by every executor and checked
against the eager oracle. Each section prints what it ran and a line per fact of the seed page
with ``ok`` or ``FAIL``; the command exits 1 if any fact fails.

Two tables drive it: ``SECTIONS``, plain functions run in order (refimpl's here, then
fastplan's, ``fuselab.demo_fastplan``, the GPU's, ``fuselab.demo_gpu``, and the fuzzer's,
``fuselab.demo_fuzz``), and ``EXECUTORS``, what can run a whole stream (``interp``, refimpl's interpreter; ``gpu``, the
adapter found), compared with the eager oracle in every section.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from refimpl import eager
from refimpl.errors import ServiceRunning
from refimpl.frontend import Session, cat
from refimpl.planner import Plan, plan, resolve_device
from refimpl.interpreter import Interpreter, executed_steps, run_planned
from refimpl.planner.launch.launch import config_id
from refimpl.planner.log import FusionLog, LogLevel
from refimpl.planner.fusers.registry import BUILTIN_NAMES, FusionRegistry
from refimpl.seed import SEED_DESCRIPTIONS, SEED_STREAMS
from refimpl.stream import Stream
from fuselab import demo_gpu
from fuselab.demo_fastplan import fastplan_section
from fuselab.demo_fuzz import fuzz_section

__all__ = ["Report", "Executor", "SECTIONS", "EXECUTORS", "run_demo"]

# run(stream, device profile name) -> every synced tensor by id, or None when it cannot run on
# this machine (e.g. no GPU adapter: the check is skipped).
Run = Callable[[Stream, str], "Mapping[int, np.ndarray] | None"]
# compare(stream, expected, got) -> (ok, detail).
Comparer = Callable[[Stream, Mapping[int, np.ndarray], Mapping[int, np.ndarray]],
                    tuple[bool, str]]


@dataclass(frozen=True, slots=True)
class Executor:
    """What runs every stream of the demo, and how it is held to the eager oracle: exact
    equality, or ``compare`` for an executor that agrees within a documented accuracy (the
    GPU)."""

    run: Run
    compare: Comparer | None = None


@dataclass
class Report:
    """What the demo printed and which facts held."""

    device: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    passed: int = 0
    sections: int = 0

    def say(self, text: str = "") -> None:
        self.lines.append(text)
        print(text, flush=True)

    def section(self, title: str) -> None:
        """A section's title, numbered in the order the sections run."""
        self.sections += 1
        self.say(f"{self.sections}. {title}")

    def check(self, fact: str, ok: bool, detail: str = "") -> bool:
        """Print one fact of the seed page with its verdict."""
        suffix = f"  ({detail})" if detail else ""
        self.say(f"    [{'ok' if ok else 'FAIL'}] {fact}{suffix}")
        if ok:
            self.passed += 1
        else:
            self.failures.append(fact)
        return ok


# The executors compared with the eager oracle, in this order.
EXECUTORS: dict[str, Executor] = {
    "interp": Executor(run_planned),
    "gpu": Executor(demo_gpu.run_on_adapter, demo_gpu.within_bounds),
}


# --- helpers ------------------------------------------------------------------------------------


def _brief(items: list, limit: int = 8) -> str:
    """A list, or its first entries and its length when it is long."""
    if len(items) <= limit:
        return "[" + ", ".join(str(i) for i in items) + "]"
    return "[" + ", ".join(str(i) for i in items[:limit - 2]) + f", ... ({len(items)} in all)]"


def _indices(ops: tuple[int, ...]) -> str:
    if len(ops) > 3 and list(ops) == list(range(ops[0], ops[-1] + 1)):
        return f"ops {ops[0]}..{ops[-1]} ({len(ops)})"
    return f"ops {_brief(list(ops))}"


def describe_step(stream: Stream, step) -> str:
    """One line per plan step: fused steps with their fuser, FuseOps, width and aliases."""
    if not step.fused:
        return f"unfused  {_indices(step.ops)}: " + _brief([stream.items[i].name for i in step.ops])
    blocks = " | ".join(
        _brief(list(block.ops)) + (f" width {block.width}" if block.width else "")
        for block in step.blocks
    )
    aliases = ", ".join(f"t{out} into t{inp}" for out, inp in step.aliases)
    text = (f"fused    {step.fuser} {_indices(step.ops)} score {step.score}: {blocks}; "
            f"reads {_brief(list(step.inputs))} writes {_brief(list(step.outputs))}")
    return text + (f"; in place: {aliases}" if aliases else "")


def show_plan(report: Report, stream: Stream, result: Plan) -> None:
    for step in result.steps:
        report.say(f"    {describe_step(stream, step)}")


def check_oracle(report: Report, name: str, stream: Stream) -> None:
    """Every executor of ``EXECUTORS`` must reproduce the eager oracle's synced tensors."""
    expected = eager.run_stream(stream)
    for executor_name, executor in EXECUTORS.items():
        started = time.perf_counter()
        got = executor.run(stream, report.device)
        elapsed = (time.perf_counter() - started) * 1e3
        if got is None:
            report.say(f"    [skip] {executor_name}: not available on this machine")
            continue
        if executor.compare is not None:
            same, detail = executor.compare(stream, expected, got)
            report.check(f"{executor_name} matches the eager oracle on {name}", same,
                         f"{detail}, {elapsed:.1f} ms")
            continue
        same = set(got) == set(expected) and all(
            got[k].dtype == expected[k].dtype and got[k].shape == expected[k].shape
            and np.array_equal(got[k], expected[k], equal_nan=expected[k].dtype.kind == "f")
            for k in expected
        )
        report.check(f"{executor_name} reproduces the eager oracle on {name}", same,
                     f"{len(expected)} synced tensor(s), {elapsed:.1f} ms")


def seed_case(report: Report, name: str, device: str | None = None) -> tuple[Stream, Plan]:
    """Record seed stream ``name``, plan it, print the plan and compare every executor."""
    stream = SEED_STREAMS[name]()
    result = plan(stream, device or report.device)
    report.say(f"  {name}: {SEED_DESCRIPTIONS[name]}")
    show_plan(report, stream, result)
    check_oracle(report, name, stream)
    return stream, result


def fused(result: Plan):
    return result.fused_steps()


# --- sections -----------------------------------------------------------------------------------


def five_fusers(report: Report) -> None:
    report.section("The five built-in fusers, and the registry")
    registry = FusionRegistry()
    report.check("BUILTIN_NAMES is ElementWise, Matmul, Reduce, ReduceBroadcasted, NHWCRelayout",
                 tuple(BUILTIN_NAMES) == ("ElementWise", "Matmul", "Reduce",
                                          "ReduceBroadcasted", "NHWCRelayout"))
    registry.fusers(resolve_device(report.device))  # the first stream seals the registry
    try:
        registry.remove("Matmul")
        message = ""
    except ServiceRunning as error:
        message = str(error)
    report.check("register/remove after the first op fails with ServiceRunning",
                 "register or remove fusion optimizations at the start of your program"
                 in message, message)


def mul_add_exp(report: Report) -> None:
    report.section("(a * b + c).exp(): one ElementWise kernel, intermediates stay in registers")
    stream, result = seed_case(report, "mul_add_exp")
    steps = fused(result)
    report.check("one fused ElementWise step with FuseOps [Mul, Add, Exp]",
                 len(result.steps) == 1 and len(steps) == 1 and steps[0].fuser == "ElementWise"
                 and steps[0].blocks[0].ops == ("Mul", "Add", "Exp"))
    report.check("it reads a, b, c and writes only the result (a*b and +c are block locals)",
                 len(steps[0].inputs) == 3 and len(steps[0].outputs) == 1)
    report.check("1 kernel instead of 3", result.num_kernels() == 1,
                 f"{result.num_kernels()} vs {len(stream.ops)} unfused")
    report.say("    FUSELAB_LOG=basic says why (every fuser of the block, est_bindings=k/max):")
    text = io.StringIO()
    plan(stream, report.device, log=FusionLog(LogLevel.BASIC, text))
    for line in text.getvalue().splitlines():
        report.say(f"      {line}")


def _launches(name: str, device: str) -> list:
    """The launch plans of a seed stream's fused steps (main trace), in step order."""
    stream = SEED_STREAMS[name]()
    profile, executed = executed_steps(stream, device)
    interp = Interpreter(stream, profile, with_values=False)
    interp.run(executed)
    return [record.main for record in interp.records if record.main is not None]


def widths_and_in_place(report: Report) -> None:
    report.section("Vector width by the last dim, one kernel per config, in place when a is moved")
    widths = {}
    for name, shape in (("mul_add_exp_4x3", "[4, 3]"), ("mul_add_exp", "[4, 6]"),
                        ("mul_add_exp_64x64", "[64, 64]")):
        (launch,) = _launches(name, report.device)
        widths[shape] = launch.widths()[0]
        report.say(f"  {shape}: width {widths[shape]}, kernel config "
                   f"{config_id(launch.configs[0])}")
    report.check("widths 1, 2, 4 for last dims 3, 6, 64 (float, float_2, float_4 on the seed "
                 "page)", list(widths.values()) == [1, 2, 4], f"{widths}")
    (small,) = _launches("mul_add_exp_2x2", report.device)
    (moved,) = _launches("mul_add_exp", report.device)
    report.check("[2, 2] and [4, 6] are the same kernel (same config, shape is run-time data)",
                 small.configs == moved.configs, f"config {config_id(small.configs[0])}")
    report.check("a moved into the expression: the output is written into a's buffer",
                 moved.aliases == ((5, 0),), f"aliases {list(moved.aliases)}")
    (held,) = _launches("mul_add_exp_held", report.device)
    report.check("a still held (a.clone()): a fresh output buffer, a is not written",
                 held.aliases == (), f"aliases {list(held.aliases)}")
    check_oracle(report, "mul_add_exp_held", SEED_STREAMS["mul_add_exp_held"]())


def chain(report: Report) -> None:
    report.section("A 100-op element-wise chain: max_ops = 64 checked with '>' gives 65 + 35")
    _, result = seed_case(report, "chain")
    sizes = [len(step.ops) for step in result.steps]
    report.check("two fused kernels of 65 and 35 ops",
                 sizes == [65, 35] and all(s.fused for s in result.steps), f"{sizes}")


def matmul_and_reduce(report: Report) -> None:
    report.section("Matmul and reductions carry their element-wise neighbours")
    _, result = seed_case(report, "matmul_add_exp")
    report.check("(a.matmul(b) + c).exp() is one Matmul step of 3 ops",
                 [(s.fuser, len(s.ops)) for s in result.steps] == [("Matmul", 3)])
    _, result = seed_case(report, "mul_sum_dim_exp")
    report.check("(a * b).sum_dim(1).exp() is one Reduce step of 3 ops",
                 [(s.fuser, len(s.ops)) for s in result.steps] == [("Reduce", 3)])
    _, result = seed_case(report, "full_sum_plus_one")
    report.check("a full sum() is not fused, nor the + 1 after it",
                 not fused(result) and result.num_kernels() == 2)


def independent(report: Report) -> None:
    report.section("Five independent expressions before one sync")
    _, result = seed_case(report, "independent")
    steps = fused(result)
    report.check("one kernel with five outputs (metal, 28 bindings)",
                 len(result.steps) == 1 and len(steps[0].outputs) == 5,
                 f"{len(steps[0].inputs)} inputs + {len(steps[0].outputs)} outputs + 1")
    _, small = seed_case(report, "independent", "webgpu-default")
    report.check("five kernels under WebGPU's default limit (7 bindings)",
                 [s.fuser for s in small.steps] == ["ElementWise"] * 5)


def syncs_and_views(report: Report) -> None:
    report.section("What splits or stays out of a kernel")
    _, result = seed_case(report, "sync_between")
    report.check("a sync between a + b and .exp() splits them", len(result.steps) == 2)
    stream, result = seed_case(report, "lone_view")
    view_ops = {i for i, item in enumerate(stream.items)
                if getattr(item, "name", "").endswith("SwapDims")}
    report.check("a lone swap_dims is not fused (burn #5134)",
                 all(not (view_ops & set(s.ops)) for s in fused(result)))


def first_op_bindings(report: Report) -> None:
    report.section("The binding limit applies to the first op too (burn #6049 / #6053, in 0.22.1)")
    session = Session(executor=None)
    parts = [session.random((2, 4), seed=k) for k in range(8)]
    out = cat(parts, 0) * 2
    session.sync(out)
    stream = session.stream
    for device in ("metal", "webgpu-default"):
        result = plan(stream, device)
        report.say(f"  cat of 8 inputs, * 2, on {device}:")
        show_plan(report, stream, result)
    small = plan(stream, "webgpu-default")
    report.check("on webgpu-default (7 bindings) a Cat of 8 inputs is not made a kernel: "
                 "8 inputs + 1 output + 1 > 7", not small.fused_steps())
    report.check("on metal (28 bindings) the same Cat fuses with the * 2",
                 [s.fuser for s in plan(stream, "metal").steps] == ["ElementWise"])
    check_oracle(report, "cat of 8 inputs", stream)


# The sections, in the order they run: refimpl's, then fastplan's, the GPU's, the fuzzer's.
SECTIONS: list[Callable[[Report], None]] = [
    five_fusers, mul_add_exp, widths_and_in_place, chain, matmul_and_reduce, independent,
    syncs_and_views, first_op_bindings, fastplan_section, demo_gpu.gpu_section, fuzz_section,
]


# --- running it ---------------------------------------------------------------------------------


def run_demo(device: str = "metal") -> Report:
    """Run every section on ``device``; the report lists the facts that failed."""
    report = Report(device)
    report.say(f"fuselab demo: burn 0.22.1 fused-kernel generation, planned for '{device}', "
               f"checked against the eager oracle and {', '.join(EXECUTORS) or 'no executor'}")
    for section in SECTIONS:
        report.say()
        section(report)
    report.say()
    report.say(f"demo: {report.passed} facts ok, {len(report.failures)} failed")
    return report

