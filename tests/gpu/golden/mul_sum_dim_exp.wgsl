// step 0: Reduce ops [0, 1, 2], kernel 84018f405d2910f8, width 4
// fuselab reduce_fuse: Sum axis 1, unit routine, parallel width 4, acc f32
// read ops: Assign Assign Mul Assign
// write ops: Exp Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
@group(0) @binding(3) var<storage, read> info: array<u32>;


fn r0_fuse(pos: u32) -> vec4<f32> {
    let t0 = in0[pos];
    let t1 = in1[pos];
    let t2 = (t0 * t1);
    let t3 = t2;
    return t3;
}

fn w0_fuse(pos: u32, reduced: f32) {
    let t0 = exp(reduced);
    out0[pos] = t0;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let g = group * WG_SIZE + lid;
    if (g >= info[40u]) {
        return;
    }
    var rest = g;
    let c1 = rest % info[42u];
    rest = rest / info[42u];
    let c0 = rest;
    let base_in = c0 * info[43u] + c1 * info[44u];
    let base_out = c0 * info[45u] + c1 * info[46u];
    let step = info[48u];
    var acc = vec4<f32>(0.0f);
    for (var k = 0u; k < info[47u]; k = k + 1u) {
        let v = r0_fuse((base_in + k * step) / 4u);
        acc = acc + v;
    }
    let folded = acc[0] + acc[1] + acc[2] + acc[3];
    w0_fuse(base_out, folded);
}

