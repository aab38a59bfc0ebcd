// step 0: ElementWise ops [0, 1, 2], kernel dbd7eb1cc7ddff22, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Assign Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> info: array<u32>;


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
    let t0 = vec4<f32>(bitcast<f32>(info[10]));
    let t1 = vec4<f32>(bitcast<f32>(info[10]));
    let t2 = (t0 + t1);
    out0[pos] = t2;
    // Fuse on write end
}

