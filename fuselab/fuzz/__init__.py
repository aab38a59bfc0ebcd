"""``fuselab fuzz``: a fusion fuzzer that finds, shrinks and files its own bugs, and checks an
external planner (a port).

burn counterpart: none. The Python API::

    from fuselab.fuzz import Config, fuzz
    summary = fuzz(Config(seed=0, count=500, checks=("plan", "interp", "plan-space")))
    summary.to_json()["buckets"]
    meta, failure = replay("findings/<bucket>")   # None: the repro passes now

Modules: ``generate`` (streams from a seed, inputs repaired), ``checks`` (the named oracles),
``plans`` (the plan space), ``shrink``, ``repro`` (repro directories, ``--replay``),
``campaign`` (chunks, buckets, the summary), ``pool`` (processes or a Dask cluster),
``external`` (``--planner-cmd``), ``mutants`` (injected bugs, for measuring the fuzzer) and
``command`` (the command line).
"""

from fuselab.fuzz.campaign import Config, Summary, fuzz, replay
from fuselab.fuzz.checks import CHECKS, Case, Failure, Harness

__all__ = ["CHECKS", "Case", "Config", "Failure", "Harness", "Summary", "fuzz", "replay"]
