// fuselab reduce_fuse: ArgMin axis 2, cube routine, parallel width 4, acc f32
// read ops: Assign Add Log Tanh Mul Assign
// write ops: Add Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<i32>;
@group(0) @binding(2) var<storage, read> info: array<u32>;

var<workgroup> shared_acc: array<vec4<f32>, WG_SIZE>;
var<workgroup> shared_index: array<vec4<u32>, WG_SIZE>;

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

fn w0_fuse(pos: u32, reduced: i32) {
    let t0_b = bitcast<i32>(info[46]);
    let t0 = (reduced + t0_b);
    out0[pos] = t0;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let live = group < info[47u];
    var rest = group;
    let c2 = rest % info[50u];
    rest = rest / info[50u];
    let c1 = rest % info[49u];
    rest = rest / info[49u];
    let c0 = rest;
    let base_in = c0 * info[51u] + c1 * info[52u] + c2 * info[53u];
    let base_out = c0 * info[54u] + c1 * info[55u] + c2 * info[56u];
    let step = info[58u];
    var best = vec4<f32>();
    var index = vec4<u32>(0xffffffffu);
    let steps = select(0u, info[57u], live);
    for (var k = lid; k < steps; k = k + WG_SIZE) {
        let v = r0_fuse((base_in + k * step) / 4u);
        let idx = vec4<u32>(k * 4u) + vec4<u32>(0u, 1u, 2u, 3u);
        let take = (idx != vec4<u32>(0xffffffffu)) & ((index == vec4<u32>(0xffffffffu)) | (v < best) | ((v == best) & (idx < index)));
        best = select(best, v, take);
        index = select(index, idx, take);
    }
    shared_acc[lid] = best;
    shared_index[lid] = index;
    workgroupBarrier();
    for (var half = WG_SIZE / 2u; half > 0u; half = half / 2u) {
        if (lid < half) {
            let a = shared_acc[lid];
            let ia = shared_index[lid];
            let b = shared_acc[lid + half];
            let ib = shared_index[lid + half];
            let take = (ib != vec4<u32>(0xffffffffu)) & ((ia == vec4<u32>(0xffffffffu)) | (b < a) | ((b == a) & (ib < ia)));
            shared_acc[lid] = select(a, b, take);
            shared_index[lid] = select(ia, ib, take);
        }
        workgroupBarrier();
    }
    if (lid == 0u && live) {
        let best = shared_acc[0];
        let index = shared_index[0];
        var b = best[0];
        var i = index[0];
        if ((index[1] != 0xffffffffu) & ((i == 0xffffffffu) | (best[1] < b) | ((best[1] == b) & (index[1] < i)))) {
            b = best[1];
            i = index[1];
        }
        if ((index[2] != 0xffffffffu) & ((i == 0xffffffffu) | (best[2] < b) | ((best[2] == b) & (index[2] < i)))) {
            b = best[2];
            i = index[2];
        }
        if ((index[3] != 0xffffffffu) & ((i == 0xffffffffu) | (best[3] < b) | ((best[3] == b) & (index[3] < i)))) {
            b = best[3];
            i = index[3];
        }
        w0_fuse(base_out, i32(select(i, 0u, i == 0xffffffffu)));
    }
}
