"""Type stubs for the compiled fastplan.launch.launch_planners_output module: C-level only
(``launch_planners_output.pxd``), nothing is exposed to Python."""
