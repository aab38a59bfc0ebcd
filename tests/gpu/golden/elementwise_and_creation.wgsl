// step 0: ElementWise ops [0, 1, 2, 3, 6, 4, 5, 7, 8, 11, 9, 10, 12, 13, 16, 14, 15, 17, 18], kernel fb17f00f8a77fd3e, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Assign Mul Mul Add Mul Assign Mul Add Mul Assign Mul Add Mul Assign Mul Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<vec4<f32>>;
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
    let t1 = vec4<f32>(bitcast<f32>(info[19]));
    let t2_b = vec4<f32>(bitcast<f32>(info[15]));
    let t2 = (t1 * t2_b);
    let t3 = (t0 * t0);
    let t4 = (t3 + t2);
    let t5 = (t4 * t0);
    let t6 = vec4<f32>(bitcast<f32>(info[19]));
    let t7_b = vec4<f32>(bitcast<f32>(info[16]));
    let t7 = (t6 * t7_b);
    let t8 = (t5 + t7);
    let t9 = (t8 * t0);
    let t10 = vec4<f32>(bitcast<f32>(info[19]));
    let t11_b = vec4<f32>(bitcast<f32>(info[17]));
    let t11 = (t10 * t11_b);
    let t12 = (t9 + t11);
    let t13 = (t12 * t0);
    let t14 = vec4<f32>(bitcast<f32>(info[19]));
    let t15_b = vec4<f32>(bitcast<f32>(info[18]));
    let t15 = (t14 * t15_b);
    let t16 = (t13 + t15);
    out0[pos] = t16;
    // Fuse on write end
}

