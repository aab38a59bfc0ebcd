"""The launch room of fastplan: launch planning and the launch walk over a whole stream.

Mirrors ``refimpl/planner/launch/``: ``launch``, ``launch_planners``, ``launch_vectorize``,
``layout`` and ``vectorization`` under the same names; ``handles`` is the planning half of
refimpl's ``handles``, ``execute`` the compiled walk of ``execute``'s ``launch_plan_stream``
(its layout backend), and ``launch_memo`` that walk's memo of launch outcomes.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/`` and burn-fusion's handle
container (``crates/burn-fusion/src/handle.rs``).
"""
