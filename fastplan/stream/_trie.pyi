"""Type stubs for the compiled fastplan.stream._trie module: C-level only (``_trie.pxd``), nothing
is exposed to Python."""
