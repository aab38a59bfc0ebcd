"""The ingest room of fastplan: reading and checking op streams, the planner's front door.

Mirrors refimpl's top-level ``refimpl/stream.py`` and ``refimpl/validate.py`` as ``stream``
and ``validate`` (a room of their own: ``fastplan/stream/`` is the twin of the planner's
queue, ``refimpl/planner/stream/``). ``fastplan.ingest_module(name)`` gives the compiled twin,
or refimpl's module when fastplan is not compiled.

burn counterpart: none (burn's streams are built in memory; see ``refimpl/stream.py``).
"""
