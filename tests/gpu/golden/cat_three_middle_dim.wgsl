// step 0: ElementWise ops [0, 1], kernel 155ee242a7a5f29b, width 2
// fuselab elemwise_fuse: rank 3, width 2, vector axis 2
// ops: Cat Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read> info: array<u32>;


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
    let t0_n = info[9u] + info[16u] + info[23u];
    let t0_e0 = pos * 2u;
    let t0_c0_0 = (t0_e0 / info[4u]) % info[1u];
    let t0_c0_1 = (t0_e0 / info[5u]) % info[2u];
    let t0_c0_2 = (t0_e0 / info[6u]) % info[3u];
    let t0_o0_0 = t0_c0_0 % info[8u];
    let t0_o0_1 = t0_c0_1 % t0_n;
    let t0_o0_2 = t0_c0_2 % info[10u];
    let t0_end0_0 = info[9u];
    let t0_in0_0 = (t0_o0_1 < t0_end0_0);
    let t0_v0_0 = in0[select(0u, (t0_o0_0 % info[8u]) * info[11u] + (t0_o0_2 % info[10u]) * info[13u] + t0_o0_1 * info[12u], t0_in0_0)];
    let t0_end0_1 = t0_end0_0 + info[16u];
    let t0_in0_1 = (t0_o0_1 >= t0_end0_0) && (t0_o0_1 < t0_end0_1);
    let t0_v0_1 = select(t0_v0_0, in1[select(0u, (t0_o0_0 % info[15u]) * info[18u] + (t0_o0_2 % info[17u]) * info[20u] + (t0_o0_1 - t0_end0_0) * info[19u], t0_in0_1)], t0_in0_1);
    let t0_end0_2 = t0_end0_1 + info[23u];
    let t0_in0_2 = (t0_o0_1 >= t0_end0_1) && (t0_o0_1 < t0_end0_2);
    let t0_v0_2 = select(t0_v0_1, in2[select(0u, (t0_o0_0 % info[22u]) * info[25u] + (t0_o0_2 % info[24u]) * info[27u] + (t0_o0_1 - t0_end0_1) * info[26u], t0_in0_2)], t0_in0_2);
    let t0_e1 = pos * 2u + 1u;
    let t0_c1_0 = (t0_e1 / info[4u]) % info[1u];
    let t0_c1_1 = (t0_e1 / info[5u]) % info[2u];
    let t0_c1_2 = (t0_e1 / info[6u]) % info[3u];
    let t0_o1_0 = t0_c1_0 % info[8u];
    let t0_o1_1 = t0_c1_1 % t0_n;
    let t0_o1_2 = t0_c1_2 % info[10u];
    let t0_end1_0 = info[9u];
    let t0_in1_0 = (t0_o1_1 < t0_end1_0);
    let t0_v1_0 = in0[select(0u, (t0_o1_0 % info[8u]) * info[11u] + (t0_o1_2 % info[10u]) * info[13u] + t0_o1_1 * info[12u], t0_in1_0)];
    let t0_end1_1 = t0_end1_0 + info[16u];
    let t0_in1_1 = (t0_o1_1 >= t0_end1_0) && (t0_o1_1 < t0_end1_1);
    let t0_v1_1 = select(t0_v1_0, in1[select(0u, (t0_o1_0 % info[15u]) * info[18u] + (t0_o1_2 % info[17u]) * info[20u] + (t0_o1_1 - t0_end1_0) * info[19u], t0_in1_1)], t0_in1_1);
    let t0_end1_2 = t0_end1_1 + info[23u];
    let t0_in1_2 = (t0_o1_1 >= t0_end1_1) && (t0_o1_1 < t0_end1_2);
    let t0_v1_2 = select(t0_v1_1, in2[select(0u, (t0_o1_0 % info[22u]) * info[25u] + (t0_o1_2 % info[24u]) * info[27u] + (t0_o1_1 - t0_end1_1) * info[26u], t0_in1_2)], t0_in1_2);
    let t0_v = vec2<f32>(t0_v0_2, t0_v1_2);
    let t0 = t0_v;
    let t1_b = vec2<f32>(bitcast<f32>(info[35]));
    let t1 = (t0 * t1_b);
    out0[pos] = t1;
    // Fuse on write end
}

