// fuselab reduce_fuse: ReduceBroadcasted axis 1, unit form, 2 reductions
// blocks: Assign Mul Assign Assign | Assign | Assign Assign Sub Mul Assign Assign | Add Sqrt Assign | Assign Div Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out2: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out3: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> info: array<u32>;


fn r0_offset_out0(e: u32) -> u32 {
    return (e / info[3u]) % info[11u] * info[13u] +
        (e / info[4u]) % info[12u] * info[14u];
}

fn r0_fuse(pos: u32) -> vec4<f32> {
    let t0 = in0[pos];
    let t1_b = vec4<f32>(bitcast<f32>(info[30]));
    let t1 = (t0 * t1_b);
    let t2 = t1;
    out0[r0_offset_out0(pos * 4u) / 4u] = t1;
    return t2;
}

fn w1_fuse(pos: u32, reduced: f32) {
    out1[pos] = reduced;
}

fn r2_offset_out0(e: u32) -> u32 {
    return (e / info[64u]) % info[72u] * info[74u] +
        (e / info[65u]) % info[73u] * info[75u];
}

fn r2_offset_out1(e: u32) -> u32 {
    return (e / info[64u]) % info[77u] * info[79u] +
        (e / info[65u]) % info[78u] * info[80u];
}

fn r2_offset_out2(e: u32) -> u32 {
    return (e / info[64u]) % info[82u] * info[84u] +
        (e / info[65u]) % info[83u] * info[85u];
}

fn r2_fuse(pos: u32) -> vec4<f32> {
    let t0 = out0[r2_offset_out0(pos * 4u) / 4u];
    let t1_in_x = out1[r2_offset_out1(pos * 4u)];
    let t1 = vec4<f32>(t1_in_x, t1_in_x, t1_in_x, t1_in_x);
    let t2 = (t0 - t1);
    let t3 = (t2 * t2);
    out2[r2_offset_out2(pos * 4u) / 4u] = t2;
    let t5 = t3;
    return t5;
}

fn w3_fuse(pos: u32, reduced: f32) -> f32 {
    let t0_b = bitcast<f32>(info[122]);
    let t0 = (reduced + t0_b);
    let t1 = sqrt(t0);
    let t2 = t1;
    return t2;
}

fn e4_offset_out2(e: u32) -> u32 {
    return (e / info[126u]) % info[144u] * info[146u] +
        (e / info[127u]) % info[145u] * info[147u];
}

fn e4_offset_out3(e: u32) -> u32 {
    return (e / info[126u]) % info[149u] * info[151u] +
        (e / info[127u]) % info[150u] * info[152u];
}

fn e4_fuse(pos: u32, m0: vec4<f32>) {
    let t0 = out2[e4_offset_out2(pos * 4u) / 4u];
    let t1 = (t0 / m0);
    out3[e4_offset_out3(pos * 4u) / 4u] = t1;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let g = group * WG_SIZE + lid;
    if (g >= info[153u]) {
        return;
    }
    var rest = g;
    let c1 = rest % info[155u];
    rest = rest / info[155u];
    let c0 = rest;
    var w3_fuse_out: f32;
    {
        let base_in = c0 * info[157u] + c1 * info[158u];
        let step = info[160u];
        let base_out = c0 * info[161u] + c1 * info[162u];
        var acc = vec4<f32>(0.0f);
        for (var k = 0u; k < info[159u]; k = k + 1u) {
            let v = r0_fuse((base_in + k * step) / 4u);
            acc = acc + v;
        }
        let folded = acc[0] + acc[1] + acc[2] + acc[3];
        w1_fuse(base_out, folded / f32(max(info[156u], 1u)));
    }
    {
        let base_in = c0 * info[165u] + c1 * info[166u];
        let step = info[168u];
        let base_out = c0 * info[169u] + c1 * info[170u];
        var acc = vec4<f32>(0.0f);
        for (var k = 0u; k < info[167u]; k = k + 1u) {
            let v = r2_fuse((base_in + k * step) / 4u);
            acc = acc + v;
        }
        let folded = acc[0] + acc[1] + acc[2] + acc[3];
        w3_fuse_out = w3_fuse(base_out, folded / f32(max(info[156u], 1u)));
    }
    {
        let base_in = c0 * info[173u] + c1 * info[174u];
        let step = info[176u];
        for (var k = 0u; k < info[175u]; k = k + 1u) {
            e4_fuse((base_in + k * step) / 4u, vec4<f32>(w3_fuse_out));
        }
    }
}
