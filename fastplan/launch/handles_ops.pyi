"""Type stubs for the compiled fastplan.launch.handles_ops module (what launch planning reads of
an op; its C level: ``handles_ops.pxd``)."""

from refimpl.stream import Stream

def init_targets(stream: Stream) -> frozenset[int]: ...
