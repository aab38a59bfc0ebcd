"""Type stubs for the compiled fastplan.launch.launch_memo module (the launch memo of the
stream walk)."""

MEMO_CAPACITY: int
LAYOUT_CAPACITY: int

class LaunchMemo:
    hits: int
    misses: int
    keep_steps: bool
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
