"""Type stubs for the compiled fastplan.ingest.stream module (twin of refimpl.stream)."""

from pathlib import Path

from refimpl.stream import FORMAT_VERSION as FORMAT_VERSION
from refimpl.stream import InputSpec as InputSpec
from refimpl.stream import Stream as Stream
from refimpl.stream import save_stream as save_stream
from refimpl.stream import stream_to_json as stream_to_json

def stream_from_json(source: str | bytes | bytearray | dict, *, validate: bool = ...) -> Stream: ...
def load_stream(path: str | Path, *, validate: bool = ...) -> Stream: ...
