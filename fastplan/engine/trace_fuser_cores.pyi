"""Type stubs for the compiled fastplan.engine.trace_fuser_cores module (the fusers' nogil
cores; their C level: ``trace_fuser_cores.pxd``)."""

from refimpl.ops import Op

HANDLER_NAMES: tuple[str, ...]

def handler_code(op: Op) -> int: ...
