// step 0: ElementWise ops [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64], kernel 81425fca7f04c20d, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Assign
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
    let t3 = tanh(t2);
    let t4_b = vec4<f32>(bitcast<f32>(info[17]));
    let t4 = (t3 - t4_b);
    let t5_b = vec4<f32>(bitcast<f32>(info[18]));
    let t5 = (t4 + t5_b);
    let t6_b = vec4<f32>(bitcast<f32>(info[19]));
    let t6 = (t5 * t6_b);
    let t7 = tanh(t6);
    let t8_b = vec4<f32>(bitcast<f32>(info[20]));
    let t8 = (t7 - t8_b);
    let t9_b = vec4<f32>(bitcast<f32>(info[21]));
    let t9 = (t8 + t9_b);
    let t10_b = vec4<f32>(bitcast<f32>(info[22]));
    let t10 = (t9 * t10_b);
    let t11 = tanh(t10);
    let t12_b = vec4<f32>(bitcast<f32>(info[23]));
    let t12 = (t11 - t12_b);
    let t13_b = vec4<f32>(bitcast<f32>(info[24]));
    let t13 = (t12 + t13_b);
    let t14_b = vec4<f32>(bitcast<f32>(info[25]));
    let t14 = (t13 * t14_b);
    let t15 = tanh(t14);
    let t16_b = vec4<f32>(bitcast<f32>(info[26]));
    let t16 = (t15 - t16_b);
    let t17_b = vec4<f32>(bitcast<f32>(info[27]));
    let t17 = (t16 + t17_b);
    let t18_b = vec4<f32>(bitcast<f32>(info[28]));
    let t18 = (t17 * t18_b);
    let t19 = tanh(t18);
    let t20_b = vec4<f32>(bitcast<f32>(info[29]));
    let t20 = (t19 - t20_b);
    let t21_b = vec4<f32>(bitcast<f32>(info[30]));
    let t21 = (t20 + t21_b);
    let t22_b = vec4<f32>(bitcast<f32>(info[31]));
    let t22 = (t21 * t22_b);
    let t23 = tanh(t22);
    let t24_b = vec4<f32>(bitcast<f32>(info[32]));
    let t24 = (t23 - t24_b);
    let t25_b = vec4<f32>(bitcast<f32>(info[33]));
    let t25 = (t24 + t25_b);
    let t26_b = vec4<f32>(bitcast<f32>(info[34]));
    let t26 = (t25 * t26_b);
    let t27 = tanh(t26);
    let t28_b = vec4<f32>(bitcast<f32>(info[35]));
    let t28 = (t27 - t28_b);
    let t29_b = vec4<f32>(bitcast<f32>(info[36]));
    let t29 = (t28 + t29_b);
    let t30_b = vec4<f32>(bitcast<f32>(info[37]));
    let t30 = (t29 * t30_b);
    let t31 = tanh(t30);
    let t32_b = vec4<f32>(bitcast<f32>(info[38]));
    let t32 = (t31 - t32_b);
    let t33_b = vec4<f32>(bitcast<f32>(info[39]));
    let t33 = (t32 + t33_b);
    let t34_b = vec4<f32>(bitcast<f32>(info[40]));
    let t34 = (t33 * t34_b);
    let t35 = tanh(t34);
    let t36_b = vec4<f32>(bitcast<f32>(info[41]));
    let t36 = (t35 - t36_b);
    let t37_b = vec4<f32>(bitcast<f32>(info[42]));
    let t37 = (t36 + t37_b);
    let t38_b = vec4<f32>(bitcast<f32>(info[43]));
    let t38 = (t37 * t38_b);
    let t39 = tanh(t38);
    let t40_b = vec4<f32>(bitcast<f32>(info[44]));
    let t40 = (t39 - t40_b);
    let t41_b = vec4<f32>(bitcast<f32>(info[45]));
    let t41 = (t40 + t41_b);
    let t42_b = vec4<f32>(bitcast<f32>(info[46]));
    let t42 = (t41 * t42_b);
    let t43 = tanh(t42);
    let t44_b = vec4<f32>(bitcast<f32>(info[47]));
    let t44 = (t43 - t44_b);
    let t45_b = vec4<f32>(bitcast<f32>(info[48]));
    let t45 = (t44 + t45_b);
    let t46_b = vec4<f32>(bitcast<f32>(info[49]));
    let t46 = (t45 * t46_b);
    let t47 = tanh(t46);
    let t48_b = vec4<f32>(bitcast<f32>(info[50]));
    let t48 = (t47 - t48_b);
    let t49_b = vec4<f32>(bitcast<f32>(info[51]));
    let t49 = (t48 + t49_b);
    let t50_b = vec4<f32>(bitcast<f32>(info[52]));
    let t50 = (t49 * t50_b);
    let t51 = tanh(t50);
    let t52_b = vec4<f32>(bitcast<f32>(info[53]));
    let t52 = (t51 - t52_b);
    let t53_b = vec4<f32>(bitcast<f32>(info[54]));
    let t53 = (t52 + t53_b);
    let t54_b = vec4<f32>(bitcast<f32>(info[55]));
    let t54 = (t53 * t54_b);
    let t55 = tanh(t54);
    let t56_b = vec4<f32>(bitcast<f32>(info[56]));
    let t56 = (t55 - t56_b);
    let t57_b = vec4<f32>(bitcast<f32>(info[57]));
    let t57 = (t56 + t57_b);
    let t58_b = vec4<f32>(bitcast<f32>(info[58]));
    let t58 = (t57 * t58_b);
    let t59 = tanh(t58);
    let t60_b = vec4<f32>(bitcast<f32>(info[59]));
    let t60 = (t59 - t60_b);
    let t61_b = vec4<f32>(bitcast<f32>(info[60]));
    let t61 = (t60 + t61_b);
    let t62_b = vec4<f32>(bitcast<f32>(info[61]));
    let t62 = (t61 * t62_b);
    let t63 = tanh(t62);
    let t64_b = vec4<f32>(bitcast<f32>(info[62]));
    let t64 = (t63 - t64_b);
    let t65_b = vec4<f32>(bitcast<f32>(info[63]));
    let t65 = (t64 + t65_b);
    in0[pos] = t65;
    // Fuse on write end
}

// step 1: ElementWise ops [65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99], kernel 9219e50b46315718, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 1
// ops: Assign Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Add Mul Tanh Sub Assign
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
    let t1 = (t0 * t1_b);
    let t2 = tanh(t1);
    let t3_b = vec4<f32>(bitcast<f32>(info[16]));
    let t3 = (t2 - t3_b);
    let t4_b = vec4<f32>(bitcast<f32>(info[17]));
    let t4 = (t3 + t4_b);
    let t5_b = vec4<f32>(bitcast<f32>(info[18]));
    let t5 = (t4 * t5_b);
    let t6 = tanh(t5);
    let t7_b = vec4<f32>(bitcast<f32>(info[19]));
    let t7 = (t6 - t7_b);
    let t8_b = vec4<f32>(bitcast<f32>(info[20]));
    let t8 = (t7 + t8_b);
    let t9_b = vec4<f32>(bitcast<f32>(info[21]));
    let t9 = (t8 * t9_b);
    let t10 = tanh(t9);
    let t11_b = vec4<f32>(bitcast<f32>(info[22]));
    let t11 = (t10 - t11_b);
    let t12_b = vec4<f32>(bitcast<f32>(info[23]));
    let t12 = (t11 + t12_b);
    let t13_b = vec4<f32>(bitcast<f32>(info[24]));
    let t13 = (t12 * t13_b);
    let t14 = tanh(t13);
    let t15_b = vec4<f32>(bitcast<f32>(info[25]));
    let t15 = (t14 - t15_b);
    let t16_b = vec4<f32>(bitcast<f32>(info[26]));
    let t16 = (t15 + t16_b);
    let t17_b = vec4<f32>(bitcast<f32>(info[27]));
    let t17 = (t16 * t17_b);
    let t18 = tanh(t17);
    let t19_b = vec4<f32>(bitcast<f32>(info[28]));
    let t19 = (t18 - t19_b);
    let t20_b = vec4<f32>(bitcast<f32>(info[29]));
    let t20 = (t19 + t20_b);
    let t21_b = vec4<f32>(bitcast<f32>(info[30]));
    let t21 = (t20 * t21_b);
    let t22 = tanh(t21);
    let t23_b = vec4<f32>(bitcast<f32>(info[31]));
    let t23 = (t22 - t23_b);
    let t24_b = vec4<f32>(bitcast<f32>(info[32]));
    let t24 = (t23 + t24_b);
    let t25_b = vec4<f32>(bitcast<f32>(info[33]));
    let t25 = (t24 * t25_b);
    let t26 = tanh(t25);
    let t27_b = vec4<f32>(bitcast<f32>(info[34]));
    let t27 = (t26 - t27_b);
    let t28_b = vec4<f32>(bitcast<f32>(info[35]));
    let t28 = (t27 + t28_b);
    let t29_b = vec4<f32>(bitcast<f32>(info[36]));
    let t29 = (t28 * t29_b);
    let t30 = tanh(t29);
    let t31_b = vec4<f32>(bitcast<f32>(info[37]));
    let t31 = (t30 - t31_b);
    let t32_b = vec4<f32>(bitcast<f32>(info[38]));
    let t32 = (t31 + t32_b);
    let t33_b = vec4<f32>(bitcast<f32>(info[39]));
    let t33 = (t32 * t33_b);
    let t34 = tanh(t33);
    let t35_b = vec4<f32>(bitcast<f32>(info[40]));
    let t35 = (t34 - t35_b);
    in0[pos] = t35;
    // Fuse on write end
}

