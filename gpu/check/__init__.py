"""How far GPU results may be from the oracle, and the checks that hold them to it.

* ``tolerance``: per-op bounds from WGSL's accuracy rules (``GPU_ULP_TOLERANCE``);
* ``chain_bounds``: those bounds carried along a stream, per element of each synced tensor;
* ``agreement``: a GPU run against the interpreter (or the eager oracle) within them;
* ``accuracy``: an adapter's measured accuracy per op against the tolerance table.
"""
