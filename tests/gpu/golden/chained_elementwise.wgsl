// step 0: ElementWise ops [0, 1, 2], kernel 9e224fbeef9a773c, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Assign Assign Add Mul Exp Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec4<f32>>;
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
    let t0 = in0[pos];
    let t1 = in1[pos];
    let t2 = in2[pos];
    let t3 = (t0 + t1);
    let t4 = (t3 * t2);
    let t5 = exp(t4);
    in0[pos] = t5;
    // Fuse on write end
}

