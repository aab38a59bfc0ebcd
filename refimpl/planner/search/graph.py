"""The dependency-graph toolkit the search uses: data-flow nodes, the block DAG, transitive
reachability (the merge guard) and the lifetime check of an execution order.

burn counterpart: ``crates/burn-fusion/src/search/graph/{node,dag,subgraph,lifetime}.rs``.

Nothing here knows about tensors or fusers: a node only says which resources it produces,
reads and frees, and where it sits in program order. Edges are derived, never declared:

* read-after-write: a node reading a resource depends on every other node producing it;
* write-after-read: a node freeing a resource depends on every other node reading it.

A set of node indices (burn ``SubGraph``) is a Python ``int`` used as a bit set: bit ``i`` is
node ``i``. Iterating one (``bits``) yields indices in ascending order, so every loop here is
deterministic.

Invariants (the Cython twin must keep them):

* ``Dag.topological_order`` emits, among the ready nodes, the smallest ``(position, index)``
  first; with no edges it reproduces program order.
* ``Reachability.can_contract`` refuses empty subgraphs.
* ``is_valid_execution_order`` treats a resource no ordered node produces as live on entry.

>>> nodes = [TestNode(0, produced=(10,)), TestNode(1, read=(10,), produced=(11,))]
>>> Dag(nodes).topological_order()
[0, 1]
>>> is_valid_execution_order([nodes[1], nodes[0]])
False
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Protocol, Sequence

__all__ = [
    "GraphNode",
    "TestNode",
    "bits",
    "Dag",
    "Reachability",
    "depends_on",
    "is_valid_execution_order",
]


class GraphNode(Protocol):
    """Data-flow description of one node (burn ``GraphNode``). The tuples list resources in
    a fixed order; ``produces``/``reads`` are the membership forms."""

    def produced(self) -> tuple[int, ...]: ...

    def read(self) -> tuple[int, ...]: ...

    def freed(self) -> tuple[int, ...]: ...

    def produces(self, resource: int) -> bool: ...

    def reads(self, resource: int) -> bool: ...

    def position(self) -> int: ...


class TestNode:
    """A plain node for tests and doctests: resources given as tuples. A freed resource is
    also read (as a ``ReadWrite`` input is)."""

    __test__ = False  # not a pytest test class
    __slots__ = ("pos", "produced_ids", "read_ids", "freed_ids")

    def __init__(self, pos: int, *, produced=(), read=(), frees=()):
        self.pos = pos
        self.produced_ids = tuple(produced)
        self.read_ids = tuple(read) + tuple(frees)
        self.freed_ids = tuple(frees)

    def produced(self) -> tuple[int, ...]:
        return self.produced_ids

    def read(self) -> tuple[int, ...]:
        return self.read_ids

    def freed(self) -> tuple[int, ...]:
        return self.freed_ids

    def produces(self, resource: int) -> bool:
        return resource in self.produced_ids

    def reads(self, resource: int) -> bool:
        return resource in self.read_ids

    def position(self) -> int:
        return self.pos


def bits(mask: int) -> list[int]:
    """The node indices of a bit set, ascending.

    >>> bits(0b10110)
    [1, 2, 4]
    """
    found: list[int] = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found


def depends_on(node: GraphNode, other: GraphNode) -> bool:
    """Whether ``node`` must run after ``other`` (read-after-write or write-after-read)."""
    for resource in node.read():
        if other.produces(resource):
            return True
    for resource in node.freed():
        if other.reads(resource):
            return True
    return False


class Dag:
    """The dependency graph of a fixed list of nodes (burn ``Dag``); it may hold a cycle,
    which ``topological_order`` reports as ``None``."""

    def __init__(self, nodes: Sequence[GraphNode]):
        count = len(nodes)
        self.dependencies = [0] * count  # direct: nodes that must run before node i
        self.dependents = [0] * count  # transpose
        for i in range(count):
            for j in range(count):
                if i != j and depends_on(nodes[i], nodes[j]):
                    self.dependencies[i] |= 1 << j
                    self.dependents[j] |= 1 << i
        self.positions = [node.position() for node in nodes]

    def __len__(self) -> int:
        return len(self.dependencies)

    def depends_on(self, i: int, j: int) -> bool:
        """Whether node ``i`` directly depends on node ``j``."""
        return bool(self.dependencies[i] >> j & 1)

    def topological_order(self) -> list[int] | None:
        """Dependencies first; ties by smallest ``(position, index)``; ``None`` on a cycle."""
        pending = [mask.bit_count() for mask in self.dependencies]
        ready = [(self.positions[i], i) for i in range(len(self)) if pending[i] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            _, i = heapq.heappop(ready)
            order.append(i)
            for dependent in bits(self.dependents[i]):
                pending[dependent] -= 1
                if pending[dependent] == 0:
                    heapq.heappush(ready, (self.positions[dependent], dependent))
        return order if len(order) == len(self) else None

    def is_acyclic(self) -> bool:
        return self.topological_order() is not None

    def reachability(self) -> Reachability:
        """Transitive ancestors and descendants of every node."""
        ancestors = list(self.dependencies)
        order = self.topological_order()
        if order is not None:
            for i in order:
                for j in bits(self.dependencies[i]):
                    ancestors[i] |= ancestors[j]
        else:
            _relax_to_fixpoint(ancestors, self.dependencies)
        descendants = [0] * len(self)
        for i in range(len(self)):
            for j in bits(ancestors[i]):
                descendants[j] |= 1 << i
        return Reachability(tuple(ancestors), tuple(descendants))


def _relax_to_fixpoint(ancestors: list[int], dependencies: list[int]) -> None:
    """On a cyclic graph no linear pass exists: union along direct edges until stable."""
    changed = True
    while changed:
        changed = False
        for i in range(len(ancestors)):
            before = ancestors[i]
            for j in bits(dependencies[i]):
                ancestors[i] |= ancestors[j]
            changed = changed or ancestors[i] != before


@dataclass(frozen=True, slots=True)
class Reachability:
    """Transitive reachability over a ``Dag`` (burn ``Reachability``): the merge guard."""

    ancestors: tuple[int, ...]
    descendants: tuple[int, ...]

    def can_contract(self, a: int, b: int) -> bool:
        """Whether contracting subgraphs ``a`` and ``b`` into one node keeps the graph
        acyclic: no node outside ``a | b`` may be both an ancestor and a descendant of it."""
        if a == 0 or b == 0:
            return False
        union = a | b
        above = 0
        below = 0
        for i in bits(union):
            above |= self.ancestors[i]
            below |= self.descendants[i]
        return (above & below & ~union) == 0


def is_valid_execution_order(order: Sequence[GraphNode]) -> bool:
    """Whether running ``order`` keeps every read resource live: no read after a free, no
    read of a resource some ordered node produces before that node ran."""
    produced_here: set[int] = set()
    for node in order:
        produced_here.update(node.produced())
    alive: set[int] = set()
    dead: set[int] = set()
    for node in order:
        for resource in node.read():
            if resource in dead:
                return False
            if resource not in alive:
                if resource in produced_here:
                    return False
                alive.add(resource)
        for resource in node.freed():
            alive.discard(resource)
            dead.add(resource)
        for resource in node.produced():
            dead.discard(resource)
            alive.add(resource)
    return True
