// step 0: ElementWise ops [0, 1], kernel 3a233bad54f466c4, width 1
// fuselab elemwise_fuse: rank 1, width 1, vector axis 0
// ops: Cat Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<i32>;
@group(0) @binding(1) var<storage, read> in1: array<i32>;
@group(0) @binding(2) var<storage, read_write> out0: array<i32>;
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
    let t0_n = info[4u] + info[7u];
    let t0_c0_0 = (pos / info[2u]) % info[1u];
    let t0_o0_0 = t0_c0_0 % t0_n;
    let t0_end0_0 = info[4u];
    let t0_in0_0 = (t0_o0_0 < t0_end0_0);
    let t0_v0_0 = in0[select(0u, t0_o0_0 * info[5u], t0_in0_0)];
    let t0_end0_1 = t0_end0_0 + info[7u];
    let t0_in0_1 = (t0_o0_0 >= t0_end0_0) && (t0_o0_0 < t0_end0_1);
    let t0_v0_1 = select(t0_v0_0, in1[select(0u, (t0_o0_0 - t0_end0_0) * info[8u], t0_in0_1)], t0_in0_1);
    let t0_v = t0_v0_1;
    let t0 = t0_v;
    let t1_b = bitcast<i32>(info[12]);
    let t1 = (t0 + t1_b);
    out0[pos] = t1;
    // Fuse on write end
}

