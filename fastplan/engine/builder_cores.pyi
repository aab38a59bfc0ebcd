"""Type stubs for the compiled fastplan.engine.builder_cores module: C-level only
(``builder_cores.pxd``), nothing is exposed to Python."""
