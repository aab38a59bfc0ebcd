// fuselab reduce_fuse: ArgMax axis 1, plane routine, perpendicular width 4, acc f32
// read ops: Assign Add Log Tanh Mul Assign
// write ops: Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<vec4<i32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;

fn r0_fuse(pos: u32) -> vec4<f32> {
    let t0 = in0[pos];
    let t1_b = vec4<f32>(bitcast<f32>(info[21]));
    let t1 = (t0 + t1_b);
    let t2 = log(t1);
    let t3 = tanh(t2);
    let t4_b = vec4<f32>(bitcast<f32>(info[22]));
    let t4 = (t3 * t4_b);
    let t5 = t4;
    return t5;
}

fn w0_store_out0(e: u32, v: i32) {
    let i = e;
    out0[i / 4u][i % 4u] = v;
}

fn w0_fuse(pos: u32, reduced: i32) {
    let t0_b = bitcast<i32>(info[46]);
    let t0 = (reduced + t0_b);
    w0_store_out0(pos, t0);
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) plane: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension;
    // one plane (subgroup) per group, planes striding over the groups.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let planes = WG_SIZE / plane;
    let stride = nwg.x * nwg.y * nwg.z * planes;
    for (var g = group * planes + lid / plane; g < info[47u]; g = g + stride) {
        var rest = g;
        let c2 = rest % info[50u];
        rest = rest / info[50u];
        let c1 = rest % info[49u];
        rest = rest / info[49u];
        let c0 = rest;
        let base_in = c0 * info[51u] + c1 * info[52u] + c2 * info[53u];
        let base_out = c0 * info[54u] + c1 * info[55u] + c2 * info[56u];
        let step = info[58u];
        var best = vec4<f32>(bitcast<f32>(info[60]));
        var index = vec4<u32>(0xffffffffu);
        for (var k = lane; k < info[57u]; k = k + plane) {
            let v = r0_fuse((base_in + k * step) / 4u);
            let idx = vec4<u32>(k);
            let take = (idx != vec4<u32>(0xffffffffu)) & ((index == vec4<u32>(0xffffffffu)) | (v > best) | ((v == best) & (idx < index)));
            best = select(best, v, take);
            index = select(index, idx, take);
        }
        let extreme = subgroupMax(best);
        index = subgroupMin(select(vec4<u32>(0xffffffffu), index, best == extreme));
        best = extreme;
        if (lane == 0u) {
            w0_fuse(base_out, i32(select(index[0], 0u, index[0] == 0xffffffffu)));
            w0_fuse(base_out + 1u * info[59u], i32(select(index[1], 0u, index[1] == 0xffffffffu)));
            w0_fuse(base_out + 2u * info[59u], i32(select(index[2], 0u, index[2] == 0xffffffffu)));
            w0_fuse(base_out + 3u * info[59u], i32(select(index[3], 0u, index[3] == 0xffffffffu)));
        }
    }
}
