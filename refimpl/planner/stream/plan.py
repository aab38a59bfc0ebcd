"""The plan: what runs, in which order — the planner's output, as plain data with a canonical
JSON form (``fuselab plan``, golden files, refimpl/fastplan equality).

burn counterpart: none as one type. A plan is the sequence of ``ExecutionStrategy`` leaves
burn's queue executes (``stream/queue/execution.rs``), as the ``FusionInspector`` reports them
(``stream/execution/trace.rs``: ``FusionBlock`` fused/unfused), with global op indices and
tensor ids instead of relative ones, plus what the fused optimization reads and writes.

* ``PlanStep.kind`` — ``"fused"`` (one kernel from a fuser's optimization) or ``"unfused"``
  (the ops run one by one).
* ``ops`` — indices into ``Stream.items`` (the JSON ``ops`` list; syncs are never in a step), in
  execution order.
* fused steps only: ``fuser`` (a ``BUILTIN_NAMES`` entry), ``score``, ``inputs``/``outputs``
  (global tensor ids read from / written to global memory, in the trace's order), ``blocks``
  (one per ``FuseBlock`` of the trace, each with ``ops``: the FuseOp names of its data ops,
  reads and writes excluded).
* Filled by launch planning (a later stage; empty until then): ``aliases`` (output id → the
  input id whose buffer it is written into, in place; kept sorted by output id) per step and
  ``width`` (the block's vector width) per block. ``None``/``()`` mean "not planned yet".
* Unfused steps carry only ``kind`` and ``ops`` (one step per ``Operations`` leaf: consecutive
  unfused ops of one strategy share a step; each still runs as its own kernel).

Canonical JSON (``plan_to_json``): a header line, then exactly one line per step, keys in the
declared order, no spaces — the same plan always gives the same bytes, and golden files diff
step by step.

>>> step = PlanStep("unfused", (3,))
>>> plan_to_json(Plan("metal", (step,)))
'{"version":1,"device":"metal","steps":[\\n{"kind":"unfused","ops":[3]}\\n]}\\n'
>>> plan_from_json(plan_to_json(Plan("metal", (step,)))) == Plan("metal", (step,))
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from refimpl.errors import FuselabError

__all__ = [
    "PLAN_VERSION",
    "PlanFormatError",
    "PlanBlock",
    "PlanStep",
    "Plan",
    "plan_to_json",
    "plan_from_json",
]

PLAN_VERSION = 1
KINDS = ("fused", "unfused")


class PlanFormatError(FuselabError, ValueError):
    """A plan document is malformed (``field`` names the JSON path at fault)."""

    def __init__(self, message: str, *, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True, slots=True)
class PlanBlock:
    """One ``FuseBlock`` of a fused step: its FuseOp names; ``width`` once launch-planned."""

    ops: tuple[str, ...]
    width: int | None = None


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One execution step (see the module docstring for the fields)."""

    kind: str
    ops: tuple[int, ...]
    fuser: str | None = None
    score: int | None = None
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    aliases: tuple[tuple[int, int], ...] = ()
    blocks: tuple[PlanBlock, ...] = ()

    def __post_init__(self) -> None:
        # aliases are a mapping: kept sorted by output id so equal plans compare equal
        object.__setattr__(self, "aliases", tuple(sorted(self.aliases)))

    @property
    def fused(self) -> bool:
        return self.kind == "fused"


@dataclass(frozen=True, slots=True)
class Plan:
    """The whole execution of a stream on one device profile, step by step."""

    device: str
    steps: tuple[PlanStep, ...]

    def fused_steps(self) -> tuple[PlanStep, ...]:
        return tuple(step for step in self.steps if step.fused)

    def num_kernels(self) -> int:
        """Kernel launches: one per fused step, one per op of an unfused step."""
        return sum(1 if step.fused else len(step.ops) for step in self.steps)


def _step_dict(step: PlanStep) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": step.kind, "ops": list(step.ops)}
    if not step.fused:
        return data
    data["fuser"] = step.fuser
    data["score"] = step.score
    data["inputs"] = list(step.inputs)
    data["outputs"] = list(step.outputs)
    data["aliases"] = {str(out): inp for out, inp in step.aliases}
    data["blocks"] = [{"ops": list(block.ops), "width": block.width} for block in step.blocks]
    return data


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def plan_to_json(plan: Plan) -> str:
    """The canonical JSON text of a plan (ends with a newline)."""
    head = f'{{"version":{PLAN_VERSION},"device":{_dumps(plan.device)},"steps":['
    if not plan.steps:
        return head + "]}\n"
    body = ",\n".join(_dumps(_step_dict(step)) for step in plan.steps)
    return f"{head}\n{body}\n]}}\n"


def _ints(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise PlanFormatError("must be a list of integers", field=where)
    return tuple(value)


def _optional_int(value: Any, where: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise PlanFormatError("must be an integer or null", field=where)
    return value


def _block_from(data: Any, where: str) -> PlanBlock:
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
        raise PlanFormatError("must be an object with an 'ops' list", field=where)
    width = _optional_int(data.get("width"), f"{where}.width")
    return PlanBlock(tuple(str(name) for name in data["ops"]), width)


def _aliases_from(data: Any, where: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(data, dict):
        raise PlanFormatError("must be an object (output id -> input id)", field=where)
    pairs = []
    for out, inp in data.items():
        if not out.isdigit() or _optional_int(inp, f"{where}.{out}") is None:
            raise PlanFormatError("maps tensor ids to tensor ids", field=where)
        pairs.append((int(out), inp))
    return tuple(pairs)


def _step_from(data: Any, index: int) -> PlanStep:
    where = f"steps.{index}"
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise PlanFormatError(f"must be an object whose kind is one of {KINDS}", field=where)
    ops = _ints(data.get("ops"), f"{where}.ops")
    if data["kind"] == "unfused":
        return PlanStep("unfused", ops)
    fuser = data.get("fuser")
    if fuser is not None and not isinstance(fuser, str):
        raise PlanFormatError("must be a fuser name", field=f"{where}.fuser")
    blocks = data.get("blocks", [])
    if not isinstance(blocks, list):
        raise PlanFormatError("must be a list", field=f"{where}.blocks")
    return PlanStep(
        "fused",
        ops,
        fuser=fuser,
        score=_optional_int(data.get("score"), f"{where}.score"),
        inputs=_ints(data.get("inputs", []), f"{where}.inputs"),
        outputs=_ints(data.get("outputs", []), f"{where}.outputs"),
        aliases=_aliases_from(data.get("aliases", {}), f"{where}.aliases"),
        blocks=tuple(_block_from(b, f"{where}.blocks.{i}") for i, b in enumerate(blocks)),
    )


def plan_from_json(text: str) -> Plan:
    """Parse a plan written by ``plan_to_json`` (any JSON layout is accepted)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanFormatError(f"not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("version") != PLAN_VERSION:
        raise PlanFormatError(f"a plan must be an object with version {PLAN_VERSION}")
    steps = data.get("steps")
    if not isinstance(steps, list) or not isinstance(data.get("device"), str):
        raise PlanFormatError("a plan needs 'device' (string) and 'steps' (list)")
    return Plan(data["device"], tuple(_step_from(step, i) for i, step in enumerate(steps)))
