// step 0: ElementWise ops [0, 1], kernel 3888f60d5ad8e515, width 1
// fuselab elemwise_fuse: rank 1, width 1, vector axis 0
// ops: Assign Cat Equal Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<u32>;
@group(0) @binding(1) var<storage, read> in1: array<u32>;
@group(0) @binding(2) var<storage, read_write> in2: array<u32>;
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
    let t0 = in2[pos];
    let t1_n = info[4u] + info[7u];
    let t1_c0_0 = (pos / info[2u]) % info[1u];
    let t1_o0_0 = t1_c0_0 % t1_n;
    let t1_end0_0 = info[4u];
    let t1_in0_0 = (t1_o0_0 < t1_end0_0);
    let t1_v0_0 = in0[select(0u, t1_o0_0 * info[5u], t1_in0_0)];
    let t1_end0_1 = t1_end0_0 + info[7u];
    let t1_in0_1 = (t1_o0_0 >= t1_end0_0) && (t1_o0_0 < t1_end0_1);
    let t1_v0_1 = select(t1_v0_0, in1[select(0u, (t1_o0_0 - t1_end0_0) * info[8u], t1_in0_1)], t1_in0_1);
    let t1_v = t1_v0_1;
    let t1 = t1_v;
    let t2 = select(0u, 1u, t1 == t0);
    let w3_bool = select(0u, 1u, t2 != 0u);
    in2[pos] = w3_bool;
    // Fuse on write end
}

