// fuselab reduce_fuse: Sum axis 2, unit routine, parallel width 4, acc f32
// read ops: Assign Add Assign
// write ops: Tanh Mul Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<f32>;
@group(0) @binding(2) var<storage, read> info: array<u32>;


fn r0_fuse(pos: u32) -> vec4<f32> {
    let t0 = in0[pos];
    let t1_b = vec4<f32>(bitcast<f32>(info[21]));
    let t1 = (t0 + t1_b);
    let t2 = t1;
    return t2;
}

fn w0_fuse(pos: u32, reduced: f32) {
    let t0 = tanh(reduced);
    let t1_b = bitcast<f32>(info[44]);
    let t1 = (t0 * t1_b);
    out0[pos] = t1;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let g = group * WG_SIZE + lid;
    if (g >= info[45u]) {
        return;
    }
    var rest = g;
    let c2 = rest % info[48u];
    rest = rest / info[48u];
    let c1 = rest % info[47u];
    rest = rest / info[47u];
    let c0 = rest;
    let base_in = c0 * info[49u] + c1 * info[50u] + c2 * info[51u];
    let base_out = c0 * info[52u] + c1 * info[53u] + c2 * info[54u];
    let step = info[56u];
    var acc = vec4<f32>(0.0f);
    for (var k = 0u; k < info[55u]; k = k + 1u) {
        let v = r0_fuse((base_in + k * step) / 4u);
        acc = acc + v;
    }
    let folded = acc[0] + acc[1] + acc[2] + acc[3];
    w0_fuse(base_out, folded);
}
