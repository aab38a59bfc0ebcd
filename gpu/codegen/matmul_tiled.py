"""The register-tiled main loop of the fused matmul: workgroup-shared ``K`` slices, vec4 loads,
an ``TM × TN`` block of products per invocation, then fuse-on-write per output vector.

burn counterpart: cubek's tiled matmul family (``burn-cubecl/src/kernel/matmul``: the
``TilingScheme`` of a stage — tile, partition, stage sizes — and its global loaders), which
``burn-cubecl-fusion``'s ``optim/matmul/tune.rs`` offers autotune as candidates; the epilogue
is ``args.rs``'s ``FusedMatmulArgs`` write. No tensor cores: WGSL has none.

One workgroup computes a ``BM × BN`` tile of one batch: per step of ``BK``, it loads the
``BM × BK`` lhs slice and the ``BK × BN`` rhs slice into workgroup memory (each invocation a
few chunks of 4 consecutive elements along the operand's contiguous axis: one vec4 load when
the binding is vec4 there, else four guarded element loads), stored ``k``-major so the inner
loop reads vec4 rows of both. Invocation ``(tx, ty)`` owns rows ``ty·TM .. ty·TM + TM - 1`` and
the column chunks ``q·(BN/TN) + tx`` (interleaved: neighbouring invocations read and write
neighbouring vectors). Out-of-range rows, columns and ``K`` are zero-filled on load and
skipped on write. Accumulation is f32 ``fma``. A ``prefetch`` tiling loads the next slice into
registers while the current one is multiplied (one barrier pair per slice either way).

The epilogue calls ``fuse_on_write(pos, seed)`` per ``width`` columns: it needs the block's
reference positions to run along ``N`` (``tiled_fits``: reference stride 1 on the last dim,
the others multiples of the width), which the host checks per launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from gpu.codegen.matmul_body import MatmulBody

__all__ = ["Tiling", "TILINGS", "tiled_main", "tiled_fits"]


@dataclass(frozen=True, slots=True)
class Tiling:
    """A workgroup tile ``bm × bn``, a ``K`` step ``bk``, an invocation tile ``tm × tn``."""

    name: str
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    prefetch: bool = False  # load the next K slice into registers during this one's products

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def shared_bytes(self) -> int:
        return 4 * self.bk * (self.bm + self.bn)

    def tiles(self, m: int, n: int) -> tuple[int, int]:
        return -(-m // self.bm), -(-n // self.bn)


TILINGS = {t.name: t for t in (
    Tiling("small", 32, 32, 8, 4, 4),  # 64 invocations: small matrices, many batches
    Tiling("tile64", 64, 64, 16, 4, 4),  # 256 invocations, 16 products each
    Tiling("large", 128, 128, 8, 8, 8),  # 256 invocations, 64 products each
    Tiling("large_k16", 128, 128, 16, 8, 8),  # the same, half the barriers, 16 KiB of tiles
    Tiling("large_pf", 128, 128, 8, 8, 8, True),  # large, the next slice loaded meanwhile
)}

for _t in TILINGS.values():  # every invocation loads the same number of chunks
    assert (_t.bm * _t.bk // 4) % _t.threads == 0 and (_t.bn * _t.bk // 4) % _t.threads == 0
    assert _t.tm % 4 == 0 and _t.tn % 4 == 0


def tiled_fits(ref_shape: Sequence[int], ref_strides: Sequence[int], width: int,
               vector_axis: int) -> bool:
    """Whether the reference positions run along ``N`` in whole vectors of ``width``."""
    rank = len(ref_shape)
    if rank < 2 or (width > 1 and vector_axis != rank - 1):
        return False
    if ref_shape[-1] > 1 and ref_strides[-1] != 1:
        return False
    if ref_shape[-1] % width:
        return False
    return all(s % width == 0 for d, s in zip(ref_shape[:-1], ref_strides[:-1]) if d > 1)


def _chunk_loads(mb: MatmulBody, t: Tiling, operand: str
                 ) -> tuple[list[str], Callable[[str], list[str]], list[str]]:
    """This invocation's chunks of one operand's ``K`` slice: the lines before the ``K`` loop
    (strides, chunk positions, the chunk registers), the loads of the slice starting at a
    given ``k`` into the registers, and their stores into workgroup memory."""
    form, rank = mb.form, mb.rank
    slot = form.lhs if operand == "a" else form.rhs
    vs = mb.signature.inputs[slot].vector_size
    base = "lhs_b" if operand == "a" else "rhs_b"
    if operand == "a":  # ``m`` or ``k`` fast
        fast, width = form.lhs_fast, t.bm
        strides = {"m": mb.stride(slot, rank - 2), "k": mb.stride(slot, rank - 1)}
        limit, first = {"m": "size_m", "k": "size_k"}, {"m": "m0"}
    else:
        fast, width = form.rhs_fast, t.bn
        strides = {"k": mb.stride(slot, rank - 2), "n": mb.stride(slot, rank - 1)}
        limit, first = {"k": "size_k", "n": "size_n"}, {"n": "n0"}
    other = next(axis for axis in strides if axis != fast)
    pre = [f"    let {operand}_s{axis} = {word};" for axis, word in strides.items()]
    strides = {axis: f"{operand}_s{axis}" for axis in strides}
    fast_len = t.bk if fast == "k" else width  # elements per row of chunks
    names = [f"{operand}_ch{it}" for it in range((t.bk * width) // 4 // t.threads)]
    stores = []
    for it, c in enumerate(names):
        pre += [f"    let {c} = lid + {it * t.threads}u;",
                f"    let {c}_o = {c} / {fast_len // 4}u;",
                f"    let {c}_f = ({c} % {fast_len // 4}u) * 4u;",
                f"    var {c}_v = vec4<f32>(0.0);"]
        tile = f"tile_{operand}"
        if fast == "k":  # scatter: the tile is k-major
            stores += [f"        {tile}[({c}_f + {i}u) * {width // 4}u + {c}_o / 4u]"
                       f"[{c}_o % 4u] = {c}_v[{i}];" for i in range(4)]
        else:
            stores.append(f"        {tile}[{c}_o * {width // 4}u + {c}_f / 4u] = {c}_v;")

    def loads(k: str) -> list[str]:
        starts = {**first, "k": k}
        lines = []
        for c in names:
            lines += ["        {",
                      f"            let gf = {starts[fast]} + {c}_f;",
                      f"            let go = {starts[other]} + {c}_o;",
                      f"            {c}_v = vec4<f32>(0.0);"]
            inside = f"go < {limit[other]}"
            if vs == 4:
                index = f"{base} + go * {strides[other]} + gf"
                vector = f"{mb.body.array(slot)}[({plus_start(mb, slot, index)}) / 4u]"
                lines += [f"            if ({inside} && gf < {limit[fast]}) {{",
                          f"                {c}_v = vec4<f32>({vector});", "            }"]
            else:
                for i in range(4):
                    at = f"{base} + go * {strides[other]} + (gf + {i}u) * {strides[fast]}"
                    lines += [f"            if ({inside} && gf + {i}u < {limit[fast]}) {{",
                              f"                {c}_v[{i}] = {mb.load(slot, at)};",
                              "            }"]
            lines.append("        }")
        return lines
    return pre, loads, stores


def plus_start(mb: MatmulBody, slot: int, index: str) -> str:
    start = mb.start(slot)
    return index if start == "0u" else f"{start} + {index}"


def _lanes(acc: str, width: int, s: int) -> str:
    if width == 4:
        return acc
    if width == 2:
        return f"{acc}.{'xy' if s == 0 else 'zw'}"
    return f"{acc}[{s}]"


def tiled_main(mb: MatmulBody, t: Tiling) -> tuple[list[str], list[str]]:
    """Workgroup declarations and the body of a tiled kernel."""
    rank, width, words = mb.rank, mb.config.width, mb.words
    cols = t.bn // t.tn  # invocations along N
    shared = [f"var<workgroup> tile_a: array<vec4<f32>, {t.bk * t.bm // 4}>;",
              f"var<workgroup> tile_b: array<vec4<f32>, {t.bk * t.bn // 4}>;"]
    lines = [f"    let tiles = {words.tiles_m} * {words.tiles_n};",
             f"    if (group >= tiles * {words.batches}) {{", "        return;", "    }",
             f"    let tile_n = group % {words.tiles_n};",
             f"    let tile_m = (group / {words.tiles_n}) % {words.tiles_m};",
             "    var rest = group / tiles;"]
    coords = []
    for d in range(rank - 3, -1, -1):
        lines += [f"    let bc{d} = rest % {mb.ref_shape(d)};",
                  f"    rest = rest / {mb.ref_shape(d)};"]
    coords = [f"bc{d}" for d in range(rank - 2)]
    lines += mb.batch_offsets(coords)
    lines += [f"    let size_m = {words.m};", f"    let size_n = {words.n};",
              f"    let size_k = {words.k};",
              f"    let m0 = tile_m * {t.bm}u;", f"    let n0 = tile_n * {t.bn}u;",
              f"    let tx = lid % {cols}u;", f"    let ty = lid / {cols}u;"]
    accs = [[f"acc{i}_{q}" for q in range(t.tn // 4)] for i in range(t.tm)]
    lines += [f"    var {acc} = vec4<f32>(0.0);" for row in accs for acc in row]
    (pre_a, load_a, store_a), (pre_b, load_b, store_b) = (_chunk_loads(mb, t, "a"),
                                                          _chunk_loads(mb, t, "b"))
    lines += pre_a + pre_b
    if t.prefetch:  # the next slice's loads are in flight while this one is computed
        lines += [line[4:] for line in load_a("0u") + load_b("0u")]
    lines.append(f"    for (var k0 = 0u; k0 < size_k; k0 = k0 + {t.bk}u) {{")
    if not t.prefetch:
        lines += load_a("k0") + load_b("k0")
    lines += store_a + store_b + ["        workgroupBarrier();"]
    if t.prefetch:
        lines += load_a(f"k0 + {t.bk}u") + load_b(f"k0 + {t.bk}u")
    lines.append(f"        for (var kk = 0u; kk < {t.bk}u; kk = kk + 1u) {{")
    lines += [f"            let a{iq} = tile_a[kk * {t.bm // 4}u + ty * {t.tm // 4}u + {iq}u];"
              for iq in range(t.tm // 4)]
    lines += [f"            let b{q} = tile_b[kk * {t.bn // 4}u + {q * cols}u + tx];"
              for q in range(t.tn // 4)]
    for i in range(t.tm):
        for q in range(t.tn // 4):
            lines.append(f"            {accs[i][q]} = fma(vec4<f32>(a{i // 4}[{i % 4}]), b{q}, "
                         f"{accs[i][q]});")
    lines += ["        }", "        workgroupBarrier();", "    }"]
    lines.append(f"    let row_stride = {mb.ref_stride(rank - 2)};")
    row_stride = "row_stride"
    for i in range(t.tm):
        lines += [f"    let m_{i} = m0 + ty * {t.tm}u + {i}u;", f"    if (m_{i} < size_m) {{",
                  f"        let row_{i} = ref_b + m_{i} * {row_stride};"]
        for q in range(t.tn // 4):
            n = f"n_{i}_{q}"
            lines.append(f"        let {n} = n0 + ({q * cols}u + tx) * 4u;")
            for s in range(4 // width):
                col = n if s == 0 else f"{n} + {s * width}u"
                seed = mb.seed(_lanes(accs[i][q], width, s))
                lines += [f"        if ({col} < size_n) {{",
                          f"            fuse_on_write((row_{i} + {col}) / {width}u, {seed});",
                          "        }"]
        lines.append("    }")
    return shared, lines
