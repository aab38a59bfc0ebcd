// fuselab matmul_fuse: large_pf, lhs in0 (k), rhs in1 (n), rank 2, width 4
// ops: Assign LowerEqual ConditionalAssign Add Div Erf Add Mul Mul Mul Assign Assign
override WG_SIZE: u32 = 256u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out1: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> info: array<u32>;

fn offset_in2(e: u32) -> u32 {
    return (e / info[3u]) % info[16u] * info[18u] +
        (e / info[4u]) % info[17u] * info[19u];
}

fn fl_erf_v4f32(x: vec4<f32>) -> vec4<f32> {
    let ax = abs(x);
    let t = vec4<f32>(1.0f) / (vec4<f32>(1.0f) + vec4<f32>(0.3275911f) * ax);
    let poly = ((((vec4<f32>(1.0614054f) * t + vec4<f32>(-1.453152f)) * t) + vec4<f32>(1.4214137f)) * t + vec4<f32>(-0.28449675f)) * t + vec4<f32>(0.2548296f);
    let positive = vec4<f32>(1.0f) - poly * t * exp(-ax * ax);
    return select(positive, -positive, x < vec4<f32>(0.0f));
}

fn fuse_on_write(pos: u32, seed: vec4<f32>) {
    let t0 = in2[offset_in2(pos * 4u) / 4u];
    let t1_b = vec4<f32>(bitcast<f32>(info[30]));
    let t1 = select(vec4<u32>(0u), vec4<u32>(1u), seed <= t1_b);
    let t2_a = vec4<f32>(bitcast<f32>(info[31]));
    let t2 = select(seed, t2_a, (t1 != vec4<u32>(0u)));
    let t3 = (t2 + t0);
    let t4_b = vec4<f32>(bitcast<f32>(info[32]));
    let t4 = (t3 / t4_b);
    let t5 = fl_erf_v4f32(t4);
    let t6_b = vec4<f32>(bitcast<f32>(info[33]));
    let t6 = (t5 + t6_b);
    let t7 = (t6 * t3);
    let t8_b = vec4<f32>(bitcast<f32>(info[34]));
    let t8 = (t7 * t8_b);
    let t9_b = vec4<f32>(bitcast<f32>(info[35]));
    let t9 = (t3 * t9_b);
    out0[pos] = t3;
    out1[pos] = t8;
}

var<workgroup> tile_a: array<vec4<f32>, 256>;

var<workgroup> tile_b: array<vec4<f32>, 256>;


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The linear workgroup index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let tiles = info[40u] * info[41u];
    if (group >= tiles * info[39u]) {
        return;
    }
    let tile_n = group % info[41u];
    let tile_m = (group / info[41u]) % info[40u];
    var rest = group / tiles;
    let lhs_b = 0u;
    let rhs_b = 0u;
    let ref_b = 0u;
    let size_m = info[36u];
    let size_n = info[37u];
    let size_k = info[38u];
    let m0 = tile_m * 128u;
    let n0 = tile_n * 128u;
    let tx = lid % 16u;
    let ty = lid / 16u;
    var acc0_0 = vec4<f32>(0.0);
    var acc0_1 = vec4<f32>(0.0);
    var acc1_0 = vec4<f32>(0.0);
    var acc1_1 = vec4<f32>(0.0);
    var acc2_0 = vec4<f32>(0.0);
    var acc2_1 = vec4<f32>(0.0);
    var acc3_0 = vec4<f32>(0.0);
    var acc3_1 = vec4<f32>(0.0);
    var acc4_0 = vec4<f32>(0.0);
    var acc4_1 = vec4<f32>(0.0);
    var acc5_0 = vec4<f32>(0.0);
    var acc5_1 = vec4<f32>(0.0);
    var acc6_0 = vec4<f32>(0.0);
    var acc6_1 = vec4<f32>(0.0);
    var acc7_0 = vec4<f32>(0.0);
    var acc7_1 = vec4<f32>(0.0);
    let a_sm = info[8u];
    let a_sk = info[9u];
    let a_ch0 = lid + 0u;
    let a_ch0_o = a_ch0 / 2u;
    let a_ch0_f = (a_ch0 % 2u) * 4u;
    var a_ch0_v = vec4<f32>(0.0);
    let b_sk = info[13u];
    let b_sn = info[14u];
    let b_ch0 = lid + 0u;
    let b_ch0_o = b_ch0 / 32u;
    let b_ch0_f = (b_ch0 % 32u) * 4u;
    var b_ch0_v = vec4<f32>(0.0);
    {
        let gf = 0u + a_ch0_f;
        let go = m0 + a_ch0_o;
        a_ch0_v = vec4<f32>(0.0);
        if (go < size_m && gf < size_k) {
            a_ch0_v = vec4<f32>(in0[(lhs_b + go * a_sm + gf) / 4u]);
        }
    }
    {
        let gf = n0 + b_ch0_f;
        let go = 0u + b_ch0_o;
        b_ch0_v = vec4<f32>(0.0);
        if (go < size_k && gf < size_n) {
            b_ch0_v = vec4<f32>(in1[(rhs_b + go * b_sk + gf) / 4u]);
        }
    }
    for (var k0 = 0u; k0 < size_k; k0 = k0 + 8u) {
        tile_a[(a_ch0_f + 0u) * 32u + a_ch0_o / 4u][a_ch0_o % 4u] = a_ch0_v[0];
        tile_a[(a_ch0_f + 1u) * 32u + a_ch0_o / 4u][a_ch0_o % 4u] = a_ch0_v[1];
        tile_a[(a_ch0_f + 2u) * 32u + a_ch0_o / 4u][a_ch0_o % 4u] = a_ch0_v[2];
        tile_a[(a_ch0_f + 3u) * 32u + a_ch0_o / 4u][a_ch0_o % 4u] = a_ch0_v[3];
        tile_b[b_ch0_o * 32u + b_ch0_f / 4u] = b_ch0_v;
        workgroupBarrier();
        {
            let gf = k0 + 8u + a_ch0_f;
            let go = m0 + a_ch0_o;
            a_ch0_v = vec4<f32>(0.0);
            if (go < size_m && gf < size_k) {
                a_ch0_v = vec4<f32>(in0[(lhs_b + go * a_sm + gf) / 4u]);
            }
        }
        {
            let gf = n0 + b_ch0_f;
            let go = k0 + 8u + b_ch0_o;
            b_ch0_v = vec4<f32>(0.0);
            if (go < size_k && gf < size_n) {
                b_ch0_v = vec4<f32>(in1[(rhs_b + go * b_sk + gf) / 4u]);
            }
        }
        for (var kk = 0u; kk < 8u; kk = kk + 1u) {
            let a0 = tile_a[kk * 32u + ty * 2u + 0u];
            let a1 = tile_a[kk * 32u + ty * 2u + 1u];
            let b0 = tile_b[kk * 32u + 0u + tx];
            let b1 = tile_b[kk * 32u + 16u + tx];
            acc0_0 = fma(vec4<f32>(a0[0]), b0, acc0_0);
            acc0_1 = fma(vec4<f32>(a0[0]), b1, acc0_1);
            acc1_0 = fma(vec4<f32>(a0[1]), b0, acc1_0);
            acc1_1 = fma(vec4<f32>(a0[1]), b1, acc1_1);
            acc2_0 = fma(vec4<f32>(a0[2]), b0, acc2_0);
            acc2_1 = fma(vec4<f32>(a0[2]), b1, acc2_1);
            acc3_0 = fma(vec4<f32>(a0[3]), b0, acc3_0);
            acc3_1 = fma(vec4<f32>(a0[3]), b1, acc3_1);
            acc4_0 = fma(vec4<f32>(a1[0]), b0, acc4_0);
            acc4_1 = fma(vec4<f32>(a1[0]), b1, acc4_1);
            acc5_0 = fma(vec4<f32>(a1[1]), b0, acc5_0);
            acc5_1 = fma(vec4<f32>(a1[1]), b1, acc5_1);
            acc6_0 = fma(vec4<f32>(a1[2]), b0, acc6_0);
            acc6_1 = fma(vec4<f32>(a1[2]), b1, acc6_1);
            acc7_0 = fma(vec4<f32>(a1[3]), b0, acc7_0);
            acc7_1 = fma(vec4<f32>(a1[3]), b1, acc7_1);
        }
        workgroupBarrier();
    }
    let row_stride = info[3u];
    let m_0 = m0 + ty * 8u + 0u;
    if (m_0 < size_m) {
        let row_0 = ref_b + m_0 * row_stride;
        let n_0_0 = n0 + (0u + tx) * 4u;
        if (n_0_0 < size_n) {
            fuse_on_write((row_0 + n_0_0) / 4u, acc0_0);
        }
        let n_0_1 = n0 + (16u + tx) * 4u;
        if (n_0_1 < size_n) {
            fuse_on_write((row_0 + n_0_1) / 4u, acc0_1);
        }
    }
    let m_1 = m0 + ty * 8u + 1u;
    if (m_1 < size_m) {
        let row_1 = ref_b + m_1 * row_stride;
        let n_1_0 = n0 + (0u + tx) * 4u;
        if (n_1_0 < size_n) {
            fuse_on_write((row_1 + n_1_0) / 4u, acc1_0);
        }
        let n_1_1 = n0 + (16u + tx) * 4u;
        if (n_1_1 < size_n) {
            fuse_on_write((row_1 + n_1_1) / 4u, acc1_1);
        }
    }
    let m_2 = m0 + ty * 8u + 2u;
    if (m_2 < size_m) {
        let row_2 = ref_b + m_2 * row_stride;
        let n_2_0 = n0 + (0u + tx) * 4u;
        if (n_2_0 < size_n) {
            fuse_on_write((row_2 + n_2_0) / 4u, acc2_0);
        }
        let n_2_1 = n0 + (16u + tx) * 4u;
        if (n_2_1 < size_n) {
            fuse_on_write((row_2 + n_2_1) / 4u, acc2_1);
        }
    }
    let m_3 = m0 + ty * 8u + 3u;
    if (m_3 < size_m) {
        let row_3 = ref_b + m_3 * row_stride;
        let n_3_0 = n0 + (0u + tx) * 4u;
        if (n_3_0 < size_n) {
            fuse_on_write((row_3 + n_3_0) / 4u, acc3_0);
        }
        let n_3_1 = n0 + (16u + tx) * 4u;
        if (n_3_1 < size_n) {
            fuse_on_write((row_3 + n_3_1) / 4u, acc3_1);
        }
    }
    let m_4 = m0 + ty * 8u + 4u;
    if (m_4 < size_m) {
        let row_4 = ref_b + m_4 * row_stride;
        let n_4_0 = n0 + (0u + tx) * 4u;
        if (n_4_0 < size_n) {
            fuse_on_write((row_4 + n_4_0) / 4u, acc4_0);
        }
        let n_4_1 = n0 + (16u + tx) * 4u;
        if (n_4_1 < size_n) {
            fuse_on_write((row_4 + n_4_1) / 4u, acc4_1);
        }
    }
    let m_5 = m0 + ty * 8u + 5u;
    if (m_5 < size_m) {
        let row_5 = ref_b + m_5 * row_stride;
        let n_5_0 = n0 + (0u + tx) * 4u;
        if (n_5_0 < size_n) {
            fuse_on_write((row_5 + n_5_0) / 4u, acc5_0);
        }
        let n_5_1 = n0 + (16u + tx) * 4u;
        if (n_5_1 < size_n) {
            fuse_on_write((row_5 + n_5_1) / 4u, acc5_1);
        }
    }
    let m_6 = m0 + ty * 8u + 6u;
    if (m_6 < size_m) {
        let row_6 = ref_b + m_6 * row_stride;
        let n_6_0 = n0 + (0u + tx) * 4u;
        if (n_6_0 < size_n) {
            fuse_on_write((row_6 + n_6_0) / 4u, acc6_0);
        }
        let n_6_1 = n0 + (16u + tx) * 4u;
        if (n_6_1 < size_n) {
            fuse_on_write((row_6 + n_6_1) / 4u, acc6_1);
        }
    }
    let m_7 = m0 + ty * 8u + 7u;
    if (m_7 < size_m) {
        let row_7 = ref_b + m_7 * row_stride;
        let n_7_0 = n0 + (0u + tx) * 4u;
        if (n_7_0 < size_n) {
            fuse_on_write((row_7 + n_7_0) / 4u, acc7_0);
        }
        let n_7_1 = n0 + (16u + tx) * 4u;
        if (n_7_1 < size_n) {
            fuse_on_write((row_7 + n_7_1) / 4u, acc7_1);
        }
    }
}
