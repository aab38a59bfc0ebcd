// step 0: ElementWise ops [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], kernel d391a2aa0e8d646a, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Assign Mul Add Exp Mul Add Exp Mul Add Exp Mul Add Exp Mul Add Exp Assign Assign Assign Assign Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> in3: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> in4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> in5: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> in6: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> in7: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> in8: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> in9: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read> in10: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read> in11: array<vec4<f32>>;
@group(0) @binding(12) var<storage, read> in12: array<vec4<f32>>;
@group(0) @binding(13) var<storage, read> in13: array<vec4<f32>>;
@group(0) @binding(14) var<storage, read> in14: array<vec4<f32>>;
@group(0) @binding(15) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(16) var<storage, read_write> out1: array<vec4<f32>>;
@group(0) @binding(17) var<storage, read_write> out2: array<vec4<f32>>;
@group(0) @binding(18) var<storage, read_write> out3: array<vec4<f32>>;
@group(0) @binding(19) var<storage, read_write> out4: array<vec4<f32>>;
@group(0) @binding(20) var<storage, read> info: array<u32>;


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
    let t3 = in3[pos];
    let t4 = in4[pos];
    let t5 = in5[pos];
    let t6 = in6[pos];
    let t7 = in7[pos];
    let t8 = in8[pos];
    let t9 = in9[pos];
    let t10 = in10[pos];
    let t11 = in11[pos];
    let t12 = in12[pos];
    let t13 = in13[pos];
    let t14 = in14[pos];
    let t15 = (t0 * t1);
    let t16 = (t15 + t2);
    let t17 = exp(t16);
    let t18 = (t3 * t4);
    let t19 = (t18 + t5);
    let t20 = exp(t19);
    let t21 = (t6 * t7);
    let t22 = (t21 + t8);
    let t23 = exp(t22);
    let t24 = (t9 * t10);
    let t25 = (t24 + t11);
    let t26 = exp(t25);
    let t27 = (t12 * t13);
    let t28 = (t27 + t14);
    let t29 = exp(t28);
    out0[pos] = t17;
    out1[pos] = t20;
    out2[pos] = t23;
    out3[pos] = t26;
    out4[pos] = t29;
    // Fuse on write end
}

