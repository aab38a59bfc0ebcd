"""The stream room of fastplan: the queue, its processor, the plan cache and its trie.

Mirrors ``refimpl/planner/stream/``: ``queue``, ``processor``, ``cache`` and ``relative``
under the same names; ``plan`` is plain data both sides share. ``_trie`` is fastplan's own
(the prefix trie the cache's policy walks).

burn counterpart: ``crates/burn-fusion/src/stream/``.
"""
