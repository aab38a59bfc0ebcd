"""Type stubs for the compiled fastplan.ingest.validate module (twin of refimpl.validate)."""

from refimpl.stream import Stream
from refimpl.validate import MAX_DIM as MAX_DIM
from refimpl.validate import MAX_NUMEL as MAX_NUMEL
from refimpl.validate import MAX_RANK as MAX_RANK
from refimpl.validate import MAX_STRIDE_CHECK as MAX_STRIDE_CHECK
from refimpl.validate import tensor_fields as tensor_fields

def validate_stream(stream: Stream) -> None: ...
