"""Which kernel runs a fused element-wise block: tier 0 (the generic interpreter kernel,
compiled once per device) at once, tier 1 (the block's specialised kernel) once its pipeline,
compiled on a worker thread, is ready.

burn counterpart: none (burn compiles each ``FuseBlockConfig`` before its first launch, and
cubecl caches the pipeline). The two-tier scheme is the "ubershader" one of game engines and
of the Dolphin emulator: never stall on a shader compile that a generic shader can cover.

``FUSELAB_TIERS`` picks the tiers: ``both``, ``specialised-only`` (the specialised kernel
compiled before its first launch) or ``tier0-only`` (tier 0 wherever it can express the
block). Unset, a GPU gets ``both`` and a CPU adapter (lavapipe) ``specialised-only``: there a
specialised pipeline compiles in milliseconds while the generic kernel, whose switch LLVM
runs masked per position, is slower to compile and to run, so tier 0 would only delay. A block tier 0 cannot express (``Tier0Unsupported``: an indexed op, f16,
too many buffers for the generic layout ...) runs on tier 1, compiled synchronously; it
never fails for that reason. With ``FUSELAB_DEBUG_LOG=stdout`` every block says which tier
ran it and why, and a tier-1 pipeline says when it became ready.

wgpu-py 0.32's ``create_compute_pipeline_async`` creates the pipeline synchronously
(``_CREATE_PIPELINE_ASYNC_IS_IMPLEMENTED = False``), so tier 1 is compiled on one worker
thread (wgpu-native's calls release the GIL). The same release exposes no pipeline cache
(``WGPUNativeFeature_PipelineCache`` is declared, no function creates one): a new process
recompiles every pipeline; only the driver's own shader cache persists.
"""

from __future__ import annotations

import os
import sys
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from refimpl.planner.launch.launch import Launch, config_id
from gpu.codegen.emit import FusedKernel, emit_block
from gpu.codegen.tier0 import REGISTERS, UNROLL, Tier0Key, tier0_source
from gpu.codegen.tier0_program import Tier0Program, Tier0Unsupported, compile_block
from gpu.errors import GpuError, UnsupportedOpError
from gpu.runtime.fused_launch import launch_words, signature_of
from gpu.runtime.server import DEBUG_LOG_ENV, Dispatched
from gpu.runtime.tiers_launch import tier0_bindings, tier0_words

__all__ = ["TIERS_ENV", "TIER_MODES", "Tiers", "tiers_for", "tiers_mode", "use_tiers"]

TIERS_ENV = "FUSELAB_TIERS"
BLOCKS_KEPT = 1024  # tier-0 programs and tier-1 pipelines kept per device (oldest dropped)
TIER_MODES = ("both", "specialised-only", "tier0-only")


def tiers_mode(device: Any = None) -> str:
    """The tiers ``FUSELAB_TIERS`` asks for; unset, those ``device`` runs best (``both``,
    or ``specialised-only`` on a CPU adapter: see the module docstring)."""
    default = "specialised-only" if getattr(device, "is_cpu", False) else "both"
    mode = os.environ.get(TIERS_ENV, "") or default
    if mode not in TIER_MODES:
        raise GpuError(f"{TIERS_ENV}={mode!r}: expected one of {', '.join(TIER_MODES)}")
    return mode


@contextmanager
def use_tiers(mode: str | None) -> Iterator[None]:
    """``FUSELAB_TIERS=mode`` inside the block (unchanged when ``mode`` is None)."""
    before = os.environ.get(TIERS_ENV)
    if mode is not None:
        os.environ[TIERS_ENV] = mode
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TIERS_ENV, None)
        else:
            os.environ[TIERS_ENV] = before


def _log(message: str) -> None:
    if os.environ.get(DEBUG_LOG_ENV) == "stdout":
        print(f"[fuselab] {message}", file=sys.stdout)


class Tiers:
    """One device's tier state: tier-0 pipelines, block programs, tier-1 compiles."""

    def __init__(self, device: Any) -> None:
        import wgpu

        self.device, self.rt = device, device.runtime
        data = min(device.max_storage_buffers, 16) - 1  # one binding holds the program
        self.rw = max(1, min(4, data // 3))
        self.ro = min(8, data - self.rw)
        self.unroll = UNROLL  # positions per invocation
        self.registers = REGISTERS  # the register file of the tier-0 kernels
        self._tier0: dict[Tier0Key, Any] = {}
        self._programs: dict[tuple, Tier0Program | str] = {}
        self._tier1: dict[tuple, Future] = {}
        self._requested: dict[tuple, float] = {}
        self._queued: dict[tuple, Any] = {}  # requested, not yet handed to the worker
        self.ready_after: dict[tuple, float] = {}  # seconds from request to a ready pipeline
        self.compiled_after: dict[tuple, float] = {}  # ... to the worker's end of compile
        self.tier0_compile_s: dict[Tier0Key, float] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuselab-tier1")
        dev = device.wgpu_device
        entries = [{"binding": k, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": "read-only-storage" if k < self.ro or
                               k == self.ro + self.rw else "storage"}}
                   for k in range(self.ro + self.rw + 1)]
        self.bind_group_layout = dev.create_bind_group_layout(entries=entries)
        self.pipeline_layout = dev.create_pipeline_layout(
            bind_group_layouts=[self.bind_group_layout])
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        self._spare_ro = dev.create_buffer(size=16, usage=usage)
        self._spare_rw = dev.create_buffer(size=16, usage=usage)

    # --- tier 0 -------------------------------------------------------------------------------

    def tier0_pipeline(self, key: Tier0Key) -> Any:
        """The tier-0 pipeline of ``key`` (compiled on first use, then kept)."""
        found = self._tier0.get(key)
        if found is None:
            started = time.perf_counter()
            dev = self.device.wgpu_device
            module = dev.create_shader_module(code=tier0_source(key))
            found = dev.create_compute_pipeline(layout=self.pipeline_layout, compute={
                "module": module, "entry_point": "main",
                "constants": {"WG_SIZE": self.rt.workgroup_size}})
            self._tier0[key] = found
            self.tier0_compile_s[key] = time.perf_counter() - started
            self.rt.compiled += 1  # in the way of this run, like any synchronous compile
            _log(f"tier 0 kernel compiled: {key}")
        return found

    def warm(self, dtypes: Sequence[tuple[str, ...]] = (("f32", "u32"),),
             families: Sequence[tuple[str, ...]] = (("core",), ("core", "math")),
             widths: Sequence[int] = (1, 2, 4)) -> float:
        """Compile tier-0 kernels ahead (by default those of f32 blocks without the special
        ops); the seconds it took."""
        started = time.perf_counter()
        for names in dtypes:
            for held in families:
                for width in widths:
                    self.tier0_pipeline(Tier0Key(tuple(sorted(names)), tuple(held), width,
                                                 self.unroll, self.ro, self.rw,
                                                 self.registers))
        return time.perf_counter() - started

    def program(self, key: tuple, launch: Launch) -> Tier0Program | str:
        """The block's tier-0 program, or why tier 0 cannot run it (cached)."""
        found = self._programs.get(key)
        if found is None:
            try:
                found = compile_block(launch.plan.configs[0], key[1])
            except Tier0Unsupported as exc:
                found = str(exc)
            self._programs[key] = found
            if len(self._programs) > BLOCKS_KEPT:
                del self._programs[next(iter(self._programs))]
        return found

    def run_tier0(self, executor: Any, program: Tier0Program, launch: Launch,
                  scalars: Sequence[int]) -> None:
        key = Tier0Key(program.dtypes, program.families, program.config.width, self.unroll,
                       self.ro, self.rw, self.registers)
        reads, writes, slots = tier0_bindings(program, launch, executor.buffer, self.ro,
                                              self.rw)
        words, n_pos = tier0_words(program, launch, scalars, slots.__getitem__)
        pipeline = self.tier0_pipeline(key)
        buffers = reads + [self._spare_ro] * (self.ro - len(reads)) + writes + \
            [self._spare_rw] * (self.rw - len(writes))
        self._submit(tier0_source(key), pipeline, self.bind_group_layout, buffers, words,
                     -(-n_pos // key.unroll))

    # --- tier 1 ------------------------------------------------------------------------------

    def request(self, key: tuple, launch: Launch) -> None:
        """Ask for the block's specialised pipeline (once); ``start`` hands the requests to
        the worker thread when the run is over, so that its Python (the WGSL emission) does
        not take the GIL from the run."""
        if key in self._tier1 or key in self._queued:
            return
        self._requested[key] = time.perf_counter()
        self._queued[key] = launch.plan.configs[0]

    def start(self) -> None:
        """Start compiling every requested specialised pipeline on the worker thread."""
        for key, config in self._queued.items():
            self._tier1[key] = self._worker.submit(self._compile_tier1, key, config, key[1])
        for key in [k for k, f in self._tier1.items() if f.done()][:-BLOCKS_KEPT or None]:
            if len(self._tier1) <= BLOCKS_KEPT:
                break
            del self._tier1[key]  # the oldest compiled pipelines (asked for again if needed)
        self._queued.clear()

    def _compile_tier1(self, key: tuple, config: Any,
                       signature: Any) -> tuple[FusedKernel, Any, Any]:
        try:
            return self._specialised(config, signature)
        finally:
            self.compiled_after[key] = time.perf_counter() - self._requested[key]

    def _specialised(self, config: Any, signature: Any) -> tuple[FusedKernel, Any, Any]:
        kernel = emit_block(config, signature)
        dev = self.device.wgpu_device
        module = dev.create_shader_module(code=kernel.source)
        pipeline = dev.create_compute_pipeline(layout="auto", compute={
            "module": module, "entry_point": "main",
            "constants": {"WG_SIZE": self.rt.workgroup_size}})
        return kernel, pipeline, pipeline.get_bind_group_layout(0)

    def ready(self, key: tuple) -> tuple[FusedKernel, Any, Any] | None:
        """The block's tier-1 kernel and pipeline when compiled, else ``None`` (never
        waits). A compile that failed leaves the block on tier 0."""
        future = self._tier1.get(key)
        if future is None or not future.done():
            return None
        if future.exception() is not None:
            if key not in self.ready_after:
                self.ready_after[key] = float("nan")
                _log(f"tier 1 failed for block {key[0]}: {future.exception()}; tier 0 stays")
            return None
        if key not in self.ready_after:
            self.ready_after[key] = time.perf_counter() - self._requested[key]
            _log(f"tier 1 ready for block {key[0]}")
        return future.result()

    def wait_tier1(self, timeout: float | None = None) -> None:
        """Block until every requested tier-1 compile is done (tests and benchmarks)."""
        self.start()
        for future in list(self._tier1.values()):
            future.exception(timeout=timeout)

    def run_tier1_ready(self, executor: Any, entry: tuple, launch: Launch,
                        scalars: Sequence[int]) -> None:
        kernel, pipeline, layout = entry
        words, n_pos = launch_words(kernel, launch, scalars)
        buffers = [executor.buffer((launch.input_handles if side == "in" else
                                    launch.output_handles)[k]) for side, k in kernel.bindings]
        executor.ran(kernel)
        self._submit(kernel.source, pipeline, layout, buffers, words, n_pos)

    # --- both ---------------------------------------------------------------------------------

    def _submit(self, source: str, pipeline: Any, layout: Any, buffers: list, words: list,
                invocations: int) -> None:
        wg = self.rt.workgroup_size
        groups = -(-invocations // wg)
        if groups == 0:
            return
        buffers = [*buffers, self.rt.words(words)]
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                   for i, b in enumerate(buffers)]
        group = self.device.wgpu_device.create_bind_group(layout=layout, entries=entries)
        self.rt.submit(Dispatched(source, tuple(buffers), groups, wg, pipeline, group,
                                  self.rt.grid(groups)))

    def run_block(self, executor: Any, launch: Launch, scalars: Sequence[int]) -> str:
        """Run an element-wise launch's one block on the tier the mode and the state allow;
        the tier that ran it (``"tier 0"`` / ``"tier 1"``)."""
        if len(launch.plan.configs) != 1:
            raise UnsupportedOpError("a multi-block trace needs the fused reduce kernel")
        mode = tiers_mode(self.device)
        key = (config_id(launch.plan.configs[0]), signature_of(launch))
        if mode == "both":
            entry = self.ready(key)
            if entry is not None:
                self.run_tier1_ready(executor, entry, launch, scalars)
                _log(f"block {key[0]}: tier 1")
                return "tier 1"
        reason = "FUSELAB_TIERS=specialised-only"
        if mode != "specialised-only":
            program = self.program(key, launch)
            reason = program if isinstance(program, str) else ""
            if not reason:
                try:
                    self.run_tier0(executor, program, launch, scalars)
                except Tier0Unsupported as exc:
                    reason = str(exc)
                else:
                    if mode == "both":
                        self.request(key, launch)
                    _log(f"block {key[0]}: tier 0")
                    return "tier 0"
        executor.run_specialised(launch, scalars)
        _log(f"block {key[0]}: tier 1 ({reason})")
        return "tier 1"


_TIERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tiers_for(device: Any) -> Tiers:
    """The device's ``Tiers`` (made on first use)."""
    found = _TIERS.get(device)
    if found is None:
        found = _TIERS[device] = Tiers(device)
    return found
