// step 0: Matmul ops [0, 1, 2], kernel e02862cca7f76523, width 4
// fuselab matmul_fuse: simple, lhs in0 (k), rhs in1 (n), rank 2, width 4
// ops: Assign Add Exp Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in2: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> info: array<u32>;

fn load_in0(e: u32) -> f32 {
    let i = e;
    return in0[i / 4u][i % 4u];
}

fn load_in1(e: u32) -> f32 {
    let i = e;
    return in1[i / 4u][i % 4u];
}

fn fuse_on_write(pos: u32, seed: vec4<f32>) {
    let t0 = in2[pos];
    let t1 = (seed + t0);
    let t2 = exp(t1);
    out0[pos] = t2;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The linear workgroup index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let pos = group * WG_SIZE + lid;
    if (pos >= info[0]) {
        return;
    }
    let e0 = pos * 4u;
    let c0_0 = (e0 / info[3u]) % info[1u];
    let c0_1 = (e0 / info[4u]) % info[2u];
    let lhs_b0 = 0u;
    let rhs_b0 = 0u;
    let a0 = lhs_b0 + c0_0 * info[8u];
    let b0 = rhs_b0 + c0_1 * info[14u];
    let e1 = pos * 4u + 1u;
    let c1_0 = (e1 / info[3u]) % info[1u];
    let c1_1 = (e1 / info[4u]) % info[2u];
    let lhs_b1 = 0u;
    let rhs_b1 = 0u;
    let a1 = lhs_b1 + c1_0 * info[8u];
    let b1 = rhs_b1 + c1_1 * info[14u];
    let e2 = pos * 4u + 2u;
    let c2_0 = (e2 / info[3u]) % info[1u];
    let c2_1 = (e2 / info[4u]) % info[2u];
    let lhs_b2 = 0u;
    let rhs_b2 = 0u;
    let a2 = lhs_b2 + c2_0 * info[8u];
    let b2 = rhs_b2 + c2_1 * info[14u];
    let e3 = pos * 4u + 3u;
    let c3_0 = (e3 / info[3u]) % info[1u];
    let c3_1 = (e3 / info[4u]) % info[2u];
    let lhs_b3 = 0u;
    let rhs_b3 = 0u;
    let a3 = lhs_b3 + c3_0 * info[8u];
    let b3 = rhs_b3 + c3_1 * info[14u];
    var acc0 = 0.0;
    var acc1 = 0.0;
    var acc2 = 0.0;
    var acc3 = 0.0;
    for (var k = 0u; k < info[27u]; k = k + 1u) {
        acc0 = fma(load_in0(a0 + k * info[9u]), load_in1(b0 + k * info[13u]), acc0);
        acc1 = fma(load_in0(a1 + k * info[9u]), load_in1(b1 + k * info[13u]), acc1);
        acc2 = fma(load_in0(a2 + k * info[9u]), load_in1(b2 + k * info[13u]), acc2);
        acc3 = fma(load_in0(a3 + k * info[9u]), load_in1(b3 + k * info[13u]), acc3);
    }
    fuse_on_write(pos, vec4<f32>(acc0, acc1, acc2, acc3));
}

