"""Type stubs for the compiled fastplan.stream.queue_relative module: C-level only
(``queue_relative.pxd``), nothing is exposed to Python."""
