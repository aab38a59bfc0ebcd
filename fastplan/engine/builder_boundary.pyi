"""Type stubs for the compiled fastplan.engine.builder_boundary module (codes of the
trace builder; its C level: ``builder_boundary.pxd``)."""

FUSE_OP_NAMES: tuple[str, ...]
FUSE_OP_CODE: dict[str, int]
FUSE_ASSIGN: int
