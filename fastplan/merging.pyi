"""Type stubs for the compiled fastplan.merging module (twin of refimpl.planner.merging)."""

from collections.abc import Sequence

from fastplan.block import Block
from fastplan.graph import Reachability
from refimpl.planner.merging import MergeBlocksResult as MergeBlocksResult

def merge_two(a: Block, b: Block, guard: Reachability) -> Block | None: ...
def merge_blocks(blocks: Sequence[Block], guard: Reachability,
                 sort: bool = False) -> MergeBlocksResult: ...
