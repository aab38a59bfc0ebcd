// step 0: ElementWise ops [0, 1], kernel dd19d8145edf67cf, width 2
// fuselab elemwise_fuse: rank 2, width 2, vector axis 1
// ops: Assign Add Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;


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
    let t1_b = vec2<f32>(bitcast<f32>(info[15]));
    let t1 = (t0 + t1_b);
    let t2_b = vec2<f32>(bitcast<f32>(info[16]));
    let t2 = (t1 * t2_b);
    out0[pos] = t2;
    // Fuse on write end
}

