// step 0: ElementWise ops [0, 1], kernel 1e5d63d529419eea, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Assign Add Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;

fn offset_in1(e: u32) -> u32 {
    return (e / info[3u]) % info[11u] * info[13u] +
        (e / info[4u]) % info[12u] * info[14u];
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
    let t1 = in1[offset_in1(pos * 4u) / 4u];
    let t2 = (t0 + t1);
    let t3_b = vec4<f32>(bitcast<f32>(info[20]));
    let t3 = (t2 * t3_b);
    in0[pos] = t3;
    // Fuse on write end
}

