"""Type stubs for the compiled fastplan.stream.queue_execution module: C-level only
(``queue_execution.pxd``), nothing is exposed to Python."""
