"""Type stubs for the compiled fastplan._keys module: C-level only (``_keys.pxd``), nothing is
exposed to Python."""
