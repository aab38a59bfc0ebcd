// step 0: Reduce ops [0, 1, 2, 3, 4], kernel c551435219b52605, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Add Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<vec4<f32>>;
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
    let t0 = in0[pos];
    let t1_b = vec4<f32>(bitcast<f32>(info[15]));
    let t1 = (t0 + t1_b);
    let t2_b = vec4<f32>(bitcast<f32>(info[16]));
    let t2 = (t1 * t2_b);
    in0[pos] = t2;
    // Fuse on write end
}

// step 0: Reduce ops [0, 1, 2, 3, 4], kernel 97b53b908fd7591d, width 1
// fuselab elemwise_fuse: rank 2, width 1, vector axis 1
// ops: Assign Mul Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<f32>;
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
    let t0 = in0[pos];
    let t1_b = bitcast<f32>(info[15]);
    let t1 = (t0 * t1_b);
    let t2_b = bitcast<f32>(info[16]);
    let t2 = (t1 + t2_b);
    in0[pos] = t2;
    // Fuse on write end
}

