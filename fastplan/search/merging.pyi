"""Type stubs for the compiled fastplan.search.merging module (twin of
refimpl.planner.search.merging)."""

from collections.abc import Sequence

from fastplan.search.block import Block
from fastplan.search.graph import Reachability
from refimpl.planner.search.merging import MergeBlocksResult as MergeBlocksResult

def merge_two(a: Block, b: Block, guard: Reachability) -> Block | None: ...
def merge_blocks(blocks: Sequence[Block], guard: Reachability,
                 sort: bool = False) -> MergeBlocksResult: ...
