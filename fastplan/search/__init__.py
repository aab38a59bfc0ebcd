"""The search room of fastplan: blocks of ops, their merging, the stream optimizer.

Mirrors ``refimpl/planner/search/``: every module under the same name.

burn counterpart: ``crates/burn-fusion/src/search/``.
"""
