// step 0: ElementWise ops [0, 1, 2, 3, 4, 5, 6], kernel 53b55fedfa438ce0, width 4
// fuselab elemwise_fuse: rank 1, width 4, vector axis 0
// ops: Assign Assign BitwiseXor BitwiseAnd BitwiseRightShift BitwiseNot BitwiseOr Assign Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<i32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<i32>>;
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
    let t0 = in0[pos];
    let t1 = in1[pos];
    let t2 = (t0 ^ t1);
    let t3_b = vec4<i32>(bitcast<i32>(info[12]));
    let t3 = (t2 & t3_b);
    let t4_b = vec4<i32>(bitcast<i32>(info[13]));
    let t4 = (t3 >> (vec4<u32>(t4_b) & vec4<u32>(31u)));
    let t5 = (~t0);
    let t6 = (t4 | t5);
    let t7 = vec4<f32>(t6);
    let t8_b = vec4<f32>(bitcast<f32>(info[14]));
    let t8 = (t7 * t8_b);
    out0[pos] = t8;
    // Fuse on write end
}

