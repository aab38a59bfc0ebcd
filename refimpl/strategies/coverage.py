"""Coverage classes: named kinds of stream and plan a property should reach routinely, told
from a drawn stream and its executed steps. Tests report them as hypothesis events, so
``--hypothesis-show-statistics`` says how often a profile draws each.

burn counterpart: none.

* ``broadcast view``: in one block of a fused trace, one input binding read both plainly and
  through a view (``InputSwapDims`` / ``InputReshaped``), the plain read broadcast (a size-1
  dim where the block's reference dim is larger);
* ``empty tensor``: an input or op output with a zero-size dim.
"""

from __future__ import annotations

from typing import Iterable

from refimpl.planner.engine.trace import Input, InputReshaped, InputSwapDims
from refimpl.stream import Stream

__all__ = ["BROADCAST_VIEW", "EMPTY_TENSOR", "stream_classes"]

BROADCAST_VIEW = "broadcast view"
EMPTY_TENSOR = "empty tensor"


def stream_classes(stream: Stream, executed: Iterable = ()) -> frozenset[str]:
    """The coverage classes ``stream`` (planned into ``executed`` steps) reaches."""
    found = set()
    shapes = [spec.shape for spec in stream.inputs.values()]
    shapes += [t.shape for op in stream.ops for t in op.nodes()]
    if any(0 in shape for shape in shapes):
        found.add(EMPTY_TENSOR)
    if any(_broadcast_view(step) for step in executed):
        found.add(BROADCAST_VIEW)
    return frozenset(found)


def _broadcast_view(step) -> bool:
    traces = step.optimization.traces() if step.optimization is not None else ()
    dims = step.shapes_relative2global
    for trace in traces:
        shapes = {r.tensor.id: r.tensor.shape for r in trace.resources.inputs}
        for block in trace.blocks:
            ref = [dims.get(s, s) for s in block.shape_ref]
            for tensor, ops in block.reads:
                args = [getattr(op.args, "input", None) for op in ops]
                viewed = any(isinstance(a, (InputSwapDims, InputReshaped)) for a in args)
                plain = any(isinstance(a, Input) for a in args)
                shape = [dims.get(s, s) for s in shapes.get(tensor, ())]
                broadcast = any(d == 1 and r > 1 for d, r in zip(reversed(shape), reversed(ref)))
                if viewed and plain and broadcast:
                    return True
    return False
