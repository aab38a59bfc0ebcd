// fuselab elemwise_fuse: rank 3, width 1, vector axis 2
// ops: Assign Assign LowerEqual ConditionalAssign Add Div Erf Add Mul Mul Mul Assign Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out1: array<f32>;
@group(0) @binding(3) var<storage, read> info: array<u32>;

fn offset_in1(e: u32) -> u32 {
    return (e / info[4u]) % info[15u] * info[18u] +
        (e / info[5u]) % info[16u] * info[19u] +
        (e / info[6u]) % info[17u] * info[20u];
}

fn fl_erf_f32(x: f32) -> f32 {
    let ax = abs(x);
    let t = 1.0f / (1.0f + 0.3275911f * ax);
    let poly = ((((1.0614054f * t + -1.453152f) * t) + 1.4214137f) * t + -0.28449675f) * t + 0.2548296f;
    let positive = 1.0f - poly * t * exp(-ax * ax);
    return select(positive, -positive, x < 0.0f);
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // One vector of the reference layout per invocation, over a grid folded past 65535
    // workgroups per dimension.
    let pos = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WG_SIZE + lid;
    // Bounds guard, in vectors: info[0] = positions that do work.
    if (pos >= info[0]) {
        return;
    }
    // Fuse on write begin
    let t0 = in0[pos];
    let t1 = in1[offset_in1(pos)];
    let t2_b = bitcast<f32>(info[35]);
    let t2 = select(0u, 1u, t0 <= t2_b);
    let t3_a = bitcast<f32>(info[36]);
    let t3 = select(t0, t3_a, (t2 != 0u));
    let t4 = (t3 + t1);
    let t5_b = bitcast<f32>(info[37]);
    let t5 = (t4 / t5_b);
    let t6 = fl_erf_f32(t5);
    let t7_b = bitcast<f32>(info[38]);
    let t7 = (t6 + t7_b);
    let t8 = (t7 * t4);
    let t9_b = bitcast<f32>(info[39]);
    let t9 = (t8 * t9_b);
    let t10_b = bitcast<f32>(info[40]);
    let t10 = (t4 * t10_b);
    in0[pos] = t4;
    out1[pos] = t9;
    // Fuse on write end
}
