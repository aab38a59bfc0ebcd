"""The fuselab application: the ``fuselab`` command, its demo and the benchmarks.

burn counterpart: none (burn is a library; it has no command line). Everything that is an
application rather than a library lives here: it imports ``refimpl``, ``fastplan`` and ``gpu``,
and none of them imports it.
"""
