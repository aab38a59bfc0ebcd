// step 1: ElementWise ops [1, 2], kernel 14f13de8a9da863a, width 4
// fuselab elemwise_fuse: rank 2, width 4, vector axis 0
// ops: Assign Assign Add Exp Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
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
    let t1_in_e = offset_in1(pos * 4u);
    let t1 = vec4<f32>(in1[t1_in_e], in1[t1_in_e + info[13u]], in1[t1_in_e + info[13u] * 2u], in1[t1_in_e + info[13u] * 3u]);
    let t2 = (t0 + t1);
    let t3 = exp(t2);
    in0[pos] = t3;
    // Fuse on write end
}

