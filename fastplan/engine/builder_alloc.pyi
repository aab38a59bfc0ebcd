"""Type stubs for the compiled fastplan.engine.builder_alloc module: C-level only
(``builder_alloc.pxd``), nothing is exposed to Python."""
