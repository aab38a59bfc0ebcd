"""Type stubs for the compiled fastplan.launch.handles_layouts module (handle layouts; its C
level: ``handles_layouts.pxd``)."""

UNFUSED_LAYOUTS: dict[str, object]
