// step 0: ElementWise ops [0, 1], kernel 5d0b6326655f0fd0, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Cat Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> info: array<u32>;


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
    let t0_n = info[7u] + info[12u];
    let t0_e0 = pos * 4u;
    let t0_c0_0 = (t0_e0 / info[3u]) % info[1u];
    let t0_c0_1 = (t0_e0 / info[4u]) % info[2u];
    let t0_o0_0 = t0_c0_0 % info[6u];
    let t0_o0_1 = t0_c0_1 % t0_n;
    let t0_end0_0 = info[7u];
    let t0_in0_0 = (t0_o0_1 < t0_end0_0);
    let t0_v0_0 = in0[select(0u, (t0_o0_0 % info[6u]) * info[8u] + t0_o0_1 * info[9u], t0_in0_0)];
    let t0_end0_1 = t0_end0_0 + info[12u];
    let t0_in0_1 = (t0_o0_1 >= t0_end0_0) && (t0_o0_1 < t0_end0_1);
    let t0_v0_1 = select(t0_v0_0, in1[select(0u, (t0_o0_0 % info[11u]) * info[13u] + (t0_o0_1 - t0_end0_0) * info[14u], t0_in0_1)], t0_in0_1);
    let t0_e1 = pos * 4u + 1u;
    let t0_c1_0 = (t0_e1 / info[3u]) % info[1u];
    let t0_c1_1 = (t0_e1 / info[4u]) % info[2u];
    let t0_o1_0 = t0_c1_0 % info[6u];
    let t0_o1_1 = t0_c1_1 % t0_n;
    let t0_end1_0 = info[7u];
    let t0_in1_0 = (t0_o1_1 < t0_end1_0);
    let t0_v1_0 = in0[select(0u, (t0_o1_0 % info[6u]) * info[8u] + t0_o1_1 * info[9u], t0_in1_0)];
    let t0_end1_1 = t0_end1_0 + info[12u];
    let t0_in1_1 = (t0_o1_1 >= t0_end1_0) && (t0_o1_1 < t0_end1_1);
    let t0_v1_1 = select(t0_v1_0, in1[select(0u, (t0_o1_0 % info[11u]) * info[13u] + (t0_o1_1 - t0_end1_0) * info[14u], t0_in1_1)], t0_in1_1);
    let t0_e2 = pos * 4u + 2u;
    let t0_c2_0 = (t0_e2 / info[3u]) % info[1u];
    let t0_c2_1 = (t0_e2 / info[4u]) % info[2u];
    let t0_o2_0 = t0_c2_0 % info[6u];
    let t0_o2_1 = t0_c2_1 % t0_n;
    let t0_end2_0 = info[7u];
    let t0_in2_0 = (t0_o2_1 < t0_end2_0);
    let t0_v2_0 = in0[select(0u, (t0_o2_0 % info[6u]) * info[8u] + t0_o2_1 * info[9u], t0_in2_0)];
    let t0_end2_1 = t0_end2_0 + info[12u];
    let t0_in2_1 = (t0_o2_1 >= t0_end2_0) && (t0_o2_1 < t0_end2_1);
    let t0_v2_1 = select(t0_v2_0, in1[select(0u, (t0_o2_0 % info[11u]) * info[13u] + (t0_o2_1 - t0_end2_0) * info[14u], t0_in2_1)], t0_in2_1);
    let t0_e3 = pos * 4u + 3u;
    let t0_c3_0 = (t0_e3 / info[3u]) % info[1u];
    let t0_c3_1 = (t0_e3 / info[4u]) % info[2u];
    let t0_o3_0 = t0_c3_0 % info[6u];
    let t0_o3_1 = t0_c3_1 % t0_n;
    let t0_end3_0 = info[7u];
    let t0_in3_0 = (t0_o3_1 < t0_end3_0);
    let t0_v3_0 = in0[select(0u, (t0_o3_0 % info[6u]) * info[8u] + t0_o3_1 * info[9u], t0_in3_0)];
    let t0_end3_1 = t0_end3_0 + info[12u];
    let t0_in3_1 = (t0_o3_1 >= t0_end3_0) && (t0_o3_1 < t0_end3_1);
    let t0_v3_1 = select(t0_v3_0, in1[select(0u, (t0_o3_0 % info[11u]) * info[13u] + (t0_o3_1 - t0_end3_0) * info[14u], t0_in3_1)], t0_in3_1);
    let t0_v = vec4<f32>(t0_v0_1, t0_v1_1, t0_v2_1, t0_v3_1);
    let t0 = t0_v;
    let t1_b = vec4<f32>(bitcast<f32>(info[20]));
    let t1 = (t0 * t1_b);
    out0[pos] = t1;
    // Fuse on write end
}

