# cython: language_level=3
"""The fusion search: partition a segment into blocks, merge them, pick a fuser per block.

burn counterpart: ``crates/burn-fusion/src/search/optimization/stream.rs``
(``StreamOptimizer``) and ``.../optimization/blocks.rs`` (``BlocksOptimizer``); notes
§9.1–§9.3.
Mirrors ``refimpl/planner/search/search.py``: same names, same order, same results.
``BlocksOptimizerResult`` is refimpl's class (plain data). Hole searches nest on an explicit
stack of ``_HoleFrame``s, as in refimpl.

Differs from refimpl:

* an op's data flow is read once when it is registered (``block.op_flow``) and handed to every
  block that sees it; the block DAG is built from those flows, and a merging pass whose merge
  fails finds the order on the DAG it already built;
* ``BlocksOptimizer.run`` over a single block takes the order ``[0]`` without building its
  one-node DAG, and hands back that block's optimization (``_Pass.single``); the search's own
  ``BlocksOptimizer``s are made without a Python call and return their lists unwrapped
  (``run_c``), ``BlocksOptimizerResult`` being built only for ``optimize`` and ``_first_pass``;
* blocks are sorted by start position by an insertion sort in C (``_by_start``, the order of
  ``sort(key=...)``); a registration with one block tries no merge;
* a drop that opens a block closes all five fusers, and what each then holds depends on the
  op's code alone: the first such block's frozen fusers are kept per op code (``_dead``) and
  the next blocks a drop of that code opens share them (``block_sharing``) instead of cloning
  five fusers and closing them again. Frozen fusers are never changed.

Invariants (refimpl's):

* Registered positions are ``0..length`` without gaps; an optimization's ordering covers a
  prefix ``0..k`` of them (holes filled, trailing positions excluded).
* Ties: blocks sort stably by start position; topological order by ``(position, index)``.
"""

cimport cython

from fastplan.opinfo cimport OpKindC
from fastplan.search.block cimport Block, block_sharing, new_block, op_flow
from fastplan.search.graph cimport _Flow, Dag, dag_from
from fastplan.search.merging cimport _Merger, blocks_merged
from fastplan.search.repair cimport repaired
from fastplan.search.strategy cimport map_block_ordering_of
from fastplan.stream.relative cimport EncodedOp, new_frozen

from refimpl.planner.log import NO_LOG, LogLevel
from refimpl.planner.search.search import BlocksOptimizerResult
from refimpl.planner.search.strategy import BlockOptimization, Composed

__all__ = ["MAX_BLOCKS", "StreamOptimizer", "BlocksOptimizer", "BlocksOptimizerResult"]

cdef object _ONE = 1  # a Python int: bit sets grow past 64 bits

MAX_BLOCKS = 5  # burn ``fusion.beam_search.max_blocks`` default

_Result = BlocksOptimizerResult
_BlockOptimization = BlockOptimization
_Composed = Composed
_FULL = LogLevel.FULL
_BASIC = LogLevel.BASIC

# _MergeStep
cdef enum:
    STEP_FULL = 0
    STEP_PARTIAL = 1
    STEP_FAIL = 2
    STEP_NO_NEED = 3


def _start(Block block):
    return block.start_pos


cdef list _by_start(list blocks):
    """``blocks`` sorted in place by start position, stably (``list.sort(key=_start)``'s
    order, by the same ``<``): an insertion sort in C, with no Python key function call per
    block (the search's lists hold at most a few blocks)."""
    cdef Py_ssize_t i, j, n = len(blocks)
    cdef Block block
    for i in range(1, n):
        block = blocks[i]
        j = i
        while j > 0 and block.start_pos < (<Block>blocks[j - 1]).start_pos:
            blocks[j] = blocks[j - 1]
            j -= 1
        if j != i:
            blocks[j] = block
    return blocks


cdef Dag blocks_dag(list blocks):
    """The dependency graph of blocks (each one node at its start position)."""
    cdef Block block
    return dag_from([block.as_flow() for block in blocks], [block.start_pos for block in blocks])


cdef class BlocksOptimizer:
    """Turns a list of blocks into a strategy (burn ``BlocksOptimizer``).

    Mirrors refimpl.planner.search.search.BlocksOptimizer.
    """

    def __init__(self, blocks, log=NO_LOG):
        cdef Block block
        self.blocks = blocks
        self.num_ops = max([block.end_pos for block in blocks])
        self.log = log

    def optimize(self):
        """Merge, emit in dependency order, optimize each block, find the holes."""
        return self.run()

    cdef object run(self):
        cdef _Pass done = self.run_c()
        return new_frozen(_Result, (done.strategies, done.ordering, done.holes))

    cdef int _read_levels(self) except -1:
        """The log's two levels, read again whenever ``log`` is another object than the one
        they were read from."""
        self._basic = self.log.enabled(_BASIC)
        self._full = self.log.enabled(_FULL)
        self._levels_of = self.log
        return 0

    cdef _Pass run_c(self):
        """``run``'s three lists, unwrapped (the search reads them at once)."""
        cdef Dag dag
        cdef list strategies = []
        cdef list ordering = []
        cdef list resolved
        cdef list holes
        cdef Py_ssize_t end, pos
        cdef Block block
        cdef bint logged
        cdef _Pass done
        self._merging_pass_c()
        if len(self.blocks) == 1:  # one node, no edge: its own order (no DAG to build)
            order = [0]
        else:  # the merging pass's DAG where it left the blocks as they were
            dag = self._dag if self._dag is not None else blocks_dag(self.blocks)
            self._dag = None
            order = dag.topological_order()
            if order is None:
                order = list(range(len(self.blocks)))
        resolved = [False] * self.num_ops
        if self.log is not self._levels_of:
            self._read_levels()
        logged = self._basic
        single = None
        for index in order:
            block = self.blocks[index]
            block_opt = block.optimized(self.log, logged)
            if len(order) == 1:
                single = block_opt
            for pos in block_opt.ordering:
                resolved[pos] = True
            ordering.extend(block_opt.ordering)
            strategies.append(block_opt.strategy)
        end = _last_resolved_end(resolved)
        holes = [pos for pos in range(end) if not resolved[pos]]
        if self._full:
            self.log.write(f"[search] {len(strategies)} strategy chunk(s), "
                           f"holes={self.log.indices(holes)}")
        done = _Pass.__new__(_Pass)
        done.strategies, done.ordering, done.holes = strategies, ordering, holes
        done.single = single
        return done

    def _merging_pass(self):
        self._merging_pass_c()

    cdef int _merging_pass_c(self) except -1:
        cdef Py_ssize_t index
        cdef Dag dag
        self._dag = None
        if len(self.blocks) == 1:
            return 0
        _by_start(self.blocks)
        for index in range(len(self.blocks)):
            (<Block>self.blocks[index]).constituents = _ONE << index
        dag = blocks_dag(self.blocks)
        guard = dag.reachability()
        result = blocks_merged(self.blocks, guard, False, self.merger)
        if result.kind == "Full":
            self.blocks = result.merged
        elif result.kind == "Partial":
            self.blocks = _by_start(result.merged + result.failed)
        else:  # the same blocks in the same order: ``run_c`` orders them on this DAG
            self._dag = dag
        return 0


cdef BlocksOptimizer _blocks_optimizer(list blocks, object log, bint basic, bint full,
                                       _Merger merger):
    """``BlocksOptimizer(blocks, log)`` without the Python call, the log's levels given (the
    search's, read when its log was set); ``blocks`` not empty."""
    cdef BlocksOptimizer optimizer = BlocksOptimizer.__new__(BlocksOptimizer)
    cdef Block block
    cdef Py_ssize_t end = (<Block>blocks[0]).end_pos
    for block in blocks:
        if block.end_pos > end:
            end = block.end_pos
    optimizer.blocks = blocks
    optimizer.num_ops = end
    optimizer.log = log
    optimizer._basic, optimizer._full, optimizer._levels_of = basic, full, log
    optimizer.merger = merger
    return optimizer


@cython.freelist(8)
cdef class _Pass:
    """What ``BlocksOptimizer.run`` finds (``BlocksOptimizerResult``'s fields), for the search
    itself: no dataclass built and read back; ``single``: the one block's optimization when
    there was one block (``_full``'s value: the same strategy and ordering)."""


cdef Py_ssize_t _last_resolved_end(list resolved):
    cdef Py_ssize_t pos
    for pos in range(len(resolved) - 1, -1, -1):
        if resolved[pos]:
            return pos + 1
    return 0


cdef class _HoleFrame:
    """One optimize call waiting for its holes to be filled."""

    cdef StreamOptimizer optimizer
    cdef object operations
    cdef list strategies
    cdef list ordering
    cdef list holes

    def __cinit__(self, StreamOptimizer optimizer, operations, list strategies, list ordering,
                  list holes):
        self.optimizer = optimizer
        self.operations = operations
        self.strategies = strategies
        self.ordering = ordering
        self.holes = holes

    cdef void absorb(self, object holes_opt) except *:
        """Append the optimization of the first holes (its positions index ``holes``)."""
        mapped = map_block_ordering_of(holes_opt, self.holes)
        self.strategies.append(mapped.strategy)
        self.ordering.extend(mapped.ordering)
        del self.holes[: len(mapped.ordering)]

    cdef list hole_operations(self):
        return [self.operations[pos] for pos in self.holes]


cdef class StreamOptimizer:
    """Incremental partition of a segment into blocks (burn ``StreamOptimizer``).

    Mirrors refimpl.planner.search.search.StreamOptimizer.
    """

    def __init__(self, fusers, max_blocks=MAX_BLOCKS, log=NO_LOG):
        self.fusers = list(fusers)
        self.blocks = []
        self.length = 0
        self.stopped = False
        self.max_blocks = max_blocks
        self.log = log
        self._merger = _Merger()
        self._flows = []

    @property
    def log(self):
        return self._log

    @log.setter
    def log(self, value):
        self._log = value
        self._full = value.enabled(_FULL)
        self._basic = value.enabled(_BASIC)

    # --- registration ------------------------------------------------------------------------

    def register(self, operation):
        """Place the next op of the segment (see the module docstring)."""
        self.register_op(operation, None)

    cdef int register_op(self, object operation, _Flow flow) except -1:
        """``register``; ``flow`` is the op's data flow when the caller has it already."""
        if self.stopped:
            if self._full:
                self._trace("op {1} dropped (optimizer stopped at op {0})", self.length,
                            operation.name)
            return 0
        if flow is None:
            flow = op_flow(operation)
        before = self.length
        self._place(operation, flow)
        if self.length != before:  # registered at position ``before``
            self._flows.append(flow)
        return 0

    cdef int _place(self, object operation, _Flow flow) except -1:
        """``register_op`` once the op is known to be taken: the next position, if placed."""
        cdef int step
        if not self.blocks:
            self._new_block(operation, flow)
            self.length += 1
            return 0
        # (one block: no merge to try; ``_merge`` would find at most one block touched)
        step = self._merge(operation, flow, False) if len(self.blocks) > 1 else STEP_NO_NEED
        if step == STEP_FAIL or step == STEP_PARTIAL:
            self._dependent(operation, flow)
            if not self.stopped:
                self.length += 1
            return 0
        if self.max_blocks is not None:
            if self._register_max_block(operation, flow, self.max_blocks):
                self.length += 1
            else:
                self._trace("stopped (max_blocks={1}) at op {0}", self.length, self.max_blocks)
                self.stopped = True
            return 0
        if self._register_inner(operation, flow, False) == 0:
            self._new_block(operation, flow)
        self.length += 1
        return 0

    def still_optimizing(self):
        """Not stopped, and no block yet or some block with an open fuser."""
        return self.optimizing()

    cdef bint optimizing(self) except -1:
        cdef Block block
        if self.stopped:
            return False
        if not self.blocks:
            return True
        for block in self.blocks:
            if block.open_():
                return True
        return False

    def reset(self):
        self.reset_all()

    cdef void reset_all(self) except *:
        # The optimizer never feeds its own fusers (every block and hole search feeds clones),
        # so once reset they stay reset: later resets skip them (refimpl resets them again,
        # to the same state).
        if not self._fusers_reset:
            for fuser in self.fusers:
                fuser.reset()
            self._fusers_reset = True
            self._dead_of = None  # made from the fusers before their reset
        self.length = 0
        if self.blocks:
            self.blocks = []
        self.stopped = False
        if self._merger.refused:  # the blocks it names are gone
            self._merger.forget()
        if self._flows:
            self._flows = []

    cdef void _trace(self, str template, object a=None, object b=None, object c=None) except *:
        """A ``full``-level stream event at position ``a`` (the template's first field,
        printed as its stream index); the text is only built when it is printed."""
        if self._full:
            self._log.write("[stream] " + template.format(self._log.index(a), b, c))

    cdef bint _register_max_block(self, object operation, _Flow flow,
                                  object max_blocks) except -1:
        if max_blocks == 1:
            self._register_inner(operation, flow, True)
            return True
        if self._register_inner(operation, flow, False) > 0:
            return True
        if len(self.blocks) < max_blocks:
            self._new_block(operation, flow)
            return True
        self._merge(operation, flow, True)
        if len(self.blocks) >= max_blocks:
            self.stopped = True
            return False
        if self._register_inner(operation, flow, False) == 0:
            self._new_block(operation, flow)
        return True

    cdef Py_ssize_t _register_inner(self, object operation, _Flow flow,
                                    bint force) except -1:
        cdef Py_ssize_t added = 0
        cdef Block block
        for block in self.blocks:
            if block.accepts(operation, self.length, flow, force):
                added += 1
        if added and self._full:  # (operation.name is only read for the log)
            self._trace("op {} {} -> accepted in {} block(s)", self.length, operation.name,
                        added)
        return added

    cdef int _merge(self, object operation, _Flow flow, bint everything) except -1:
        cdef list chosen
        cdef list kept
        cdef Py_ssize_t i, first = -1, n = len(self.blocks)
        cdef Block block
        if everything:
            if n <= 1:
                return STEP_NO_NEED
            chosen = list(range(n))
        else:  # the list is made once a second block touches the op (most ops touch one)
            chosen = None
            for i in range(n):
                block = self.blocks[i]
                if block.touches(flow):
                    if first < 0:
                        first = i
                    else:
                        if chosen is None:
                            chosen = [first]
                        chosen.append(i)
            if chosen is None:
                return STEP_NO_NEED
        for i in range(len(self.blocks)):
            (<Block>self.blocks[i]).constituents = _ONE << i
        guard = blocks_dag(self.blocks).reachability()
        result = blocks_merged([self.blocks[i] for i in chosen], guard, False, self._merger)
        if result.kind == "Fail":
            return STEP_FAIL
        kept = [self.blocks[i] for i in range(n) if i not in chosen]
        self.blocks = _by_start(kept + result.merged + result.failed)
        return STEP_FULL if result.kind == "Full" else STEP_PARTIAL

    cdef Block _opened(self, object operation, _Flow flow):
        """``Block(self.fusers)`` with ``operation`` registered at the next position. A drop
        opening a block closes every fuser, whatever the tensor: the fusers of the first such
        block are kept per op code (once all frozen) and shared by the next ones."""
        cdef Block block
        cdef EncodedOp encoded = flow.encoded
        cdef object key
        if encoded is None or encoded.c.kind != OpKindC.DROP:
            block = new_block(self.fusers)
            block.register_op(operation, self.length, flow)
            return block
        if not self._same_templates():
            self._dead, self._dead_of = {}, tuple(self.fusers)
        key = encoded.c.code
        dead = self._dead.get(key)
        if dead is not None:
            block = block_sharing(<list>dead)
            block.register_op(operation, self.length, flow)  # (no fuser is fed: all frozen)
            return block
        block = new_block(self.fusers)
        block.register_op(operation, self.length, flow)
        if not block.live():
            self._dead[key] = list(block.fusers)
        return block

    cdef bint _same_templates(self) except -1:
        """Whether ``fusers`` are the fusers ``_dead`` was made from, one by one."""
        cdef tuple made = self._dead_of
        cdef list fusers = self.fusers
        cdef Py_ssize_t i
        if made is None or len(made) != len(fusers):
            return False
        for i in range(len(made)):
            if made[i] is not fusers[i]:
                return False
        return True

    cdef void _new_block(self, object operation, _Flow flow) except *:
        cdef Block block = self._opened(operation, flow)
        self.blocks.append(block)
        if self._full:
            self._trace("op {} {} -> new block (total: {})", self.length, operation.name,
                        len(self.blocks))

    def _on_dependent_op(self, operation):
        """Give the op its own block depending on the blocks it reads from."""
        self._dependent(operation, op_flow(operation))

    cdef void _dependent(self, object operation, _Flow flow) except *:
        cdef Block block
        if self.max_blocks is not None and len(self.blocks) >= self.max_blocks:
            self._merge(operation, flow, True)
            if len(self.blocks) >= self.max_blocks:
                self._trace("stopped (max_blocks={1} reached on dependency) at op {0}",
                            self.length, self.max_blocks)
                self.stopped = True
                return
        block = self._opened(operation, flow)
        self.blocks.append(block)
        if not blocks_dag(self.blocks).is_acyclic():
            self.blocks.pop()
            self._trace("stopped (unresolvable dependency cycle) at op {}", self.length)
            self.stopped = True
            return
        if self._full:
            self._trace("op {} {} -> new dependent block (total: {})", self.length,
                        operation.name, len(self.blocks))

    # --- optimization ------------------------------------------------------------------------

    def new_empty_search(self):
        """A fresh optimizer with reset clones of the same fusers (for holes)."""
        return self.empty_clone()

    cdef StreamOptimizer empty_clone(self):
        cdef list fusers = []
        for fuser in self.fusers:
            clone = fuser.clone()
            clone.reset()
            fusers.append(clone)
        return StreamOptimizer(fusers, self.max_blocks, self._log)

    def _first_pass(self):
        cdef _Pass done = self.first_pass(False)
        return new_frozen(_Result, (done.strategies, done.ordering, done.holes))

    cdef _Pass first_pass(self, bint consume):
        """BlocksOptimizer over clones of the blocks, or (``consume``: the caller resets this
        optimizer right after) over the blocks themselves — the same result without copying
        every fuser once more."""
        cdef Block block
        cdef list blocks = list(self.blocks) if consume else \
            [block.clone() for block in self.blocks]
        cdef BlocksOptimizer optimizer
        if blocks:  # its blocks are its own (clones, or consumed)
            optimizer = _blocks_optimizer(blocks, self._log, self._basic, self._full,
                                          self._merger)
        else:  # (refimpl's max() of no block raises: the same error)
            optimizer = BlocksOptimizer(blocks, self._log)
            optimizer.merger = self._merger
        if consume:
            self.blocks = []
        return optimizer.run_c()

    def optimize(self, operations):
        """The segment's strategy; ``operations`` are the ops registered so far (at least)."""
        return self.optimized(operations, False)

    cdef object optimized(self, object operations, bint consume):
        """``optimize``; ``consume``: the blocks are used up (the caller resets next)."""
        cdef list stack
        cdef _HoleFrame frame
        cdef _Pass first = self.first_pass(consume)
        if not first.holes:
            return repaired(_full(first), operations, self._flows)
        stack = [_HoleFrame(self, operations, first.strategies, first.ordering, first.holes)]
        done = None
        while stack:
            frame = stack[len(stack) - 1]
            if done is not None:
                frame.absorb(done)
                done = None
                if not frame.holes:
                    stack.pop()
                    whole = new_frozen(_BlockOptimization, (
                        new_frozen(_Composed, (tuple(frame.strategies),)), tuple(frame.ordering)))
                    done = repaired(whole, frame.operations, frame.optimizer._flows)
                    continue
            done = _search_holes(frame, stack)
        return done


cdef object _full(_Pass result):
    """``result.full()`` (``BlocksOptimizerResult.full``) for the results ``run`` finds: one
    strategy as it is, more composed, with the ordering as a tuple."""
    cdef list strategies = result.strategies
    if result.single is not None:  # one block: its own optimization is the same value
        return result.single
    strategy = new_frozen(_Composed, (tuple(strategies),)) if len(strategies) > 1 \
        else strategies[0]
    return new_frozen(_BlockOptimization, (strategy, tuple(result.ordering)))


cdef object _search_holes(_HoleFrame frame, list stack):
    """Start a fresh search over the frame's holes: its result, or ``None`` after pushing a
    nested frame for holes of its own."""
    cdef StreamOptimizer search = frame.optimizer.empty_clone()
    cdef list hole_ops = frame.hole_operations()
    cdef _Pass first
    if search._basic:  # its position p is frame.holes[p] (refimpl maps a log that is off too)
        search.log = search._log.mapped(frame.holes)
    for operation in hole_ops:
        search.register_op(operation, None)
    first = search.first_pass(True)  # a hole search is used once
    if not first.holes:
        return repaired(_full(first), hole_ops, search._flows)
    stack.append(_HoleFrame(search, hole_ops, first.strategies, first.ordering, first.holes))
    return None
