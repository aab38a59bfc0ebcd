// fuselab reduce_fuse: ReduceBroadcasted axis 1, cube form, 2 reductions
// blocks: Assign Mul Assign Assign | Assign | Assign Assign Sub Exp Assign Assign | Assign | Assign Assign Div Assign
override WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out2: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out3: array<f32>;
@group(0) @binding(5) var<storage, read_write> out4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> info: array<u32>;

var<workgroup> shared_acc0: array<vec4<f32>, WG_SIZE>;
var<workgroup> shared_acc1: array<vec4<f32>, WG_SIZE>;

fn r0_offset_out0(e: u32) -> u32 {
    return (e / info[3u]) % info[11u] * info[13u] +
        (e / info[4u]) % info[12u] * info[14u];
}

fn r0_fuse(pos: u32) -> vec4<f32> {
    let t0 = in0[pos];
    let t1_b = vec4<f32>(bitcast<f32>(info[35]));
    let t1 = (t0 * t1_b);
    let t2 = t1;
    out0[r0_offset_out0(pos * 4u) / 4u] = t1;
    return t2;
}

fn w1_fuse(pos: u32, reduced: f32) {
    out1[pos] = reduced;
}

fn r2_offset_out0(e: u32) -> u32 {
    return (e / info[74u]) % info[82u] * info[84u] +
        (e / info[75u]) % info[83u] * info[85u];
}

fn r2_offset_out1(e: u32) -> u32 {
    return (e / info[74u]) % info[87u] * info[89u] +
        (e / info[75u]) % info[88u] * info[90u];
}

fn r2_offset_out2(e: u32) -> u32 {
    return (e / info[74u]) % info[92u] * info[94u] +
        (e / info[75u]) % info[93u] * info[95u];
}

fn r2_fuse(pos: u32) -> vec4<f32> {
    let t0 = out0[r2_offset_out0(pos * 4u) / 4u];
    let t1_in_x = out1[r2_offset_out1(pos * 4u)];
    let t1 = vec4<f32>(t1_in_x, t1_in_x, t1_in_x, t1_in_x);
    let t2 = (t0 - t1);
    let t3 = exp(t2);
    let t4 = t3;
    out2[r2_offset_out2(pos * 4u) / 4u] = t3;
    return t4;
}

fn w3_fuse(pos: u32, reduced: f32) {
    out3[pos] = reduced;
}

fn e4_offset_out2(e: u32) -> u32 {
    return (e / info[144u]) % info[162u] * info[164u] +
        (e / info[145u]) % info[163u] * info[165u];
}

fn e4_offset_out3(e: u32) -> u32 {
    return (e / info[144u]) % info[167u] * info[169u] +
        (e / info[145u]) % info[168u] * info[170u];
}

fn e4_offset_out4(e: u32) -> u32 {
    return (e / info[144u]) % info[172u] * info[174u] +
        (e / info[145u]) % info[173u] * info[175u];
}

fn e4_fuse(pos: u32) {
    let t0 = out2[e4_offset_out2(pos * 4u) / 4u];
    let t1_in_x = out3[e4_offset_out3(pos * 4u)];
    let t1 = vec4<f32>(t1_in_x, t1_in_x, t1_in_x, t1_in_x);
    let t2 = (t0 / t1);
    out4[e4_offset_out4(pos * 4u) / 4u] = t2;
}


@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let live = group < info[176u];
    var rest = group;
    let c1 = rest % info[178u];
    rest = rest / info[178u];
    let c0 = rest;
    {
        let base_in = c0 * info[180u] + c1 * info[181u];
        let step = info[183u];
        let base_out = c0 * info[184u] + c1 * info[185u];
        var acc = vec4<f32>(bitcast<f32>(info[200]));
        let steps = select(0u, info[182u], live);
        for (var k = lid; k < steps; k = k + WG_SIZE) {
            let v = r0_fuse((base_in + k * step) / 4u);
            acc = max(acc, v);
        }
        shared_acc0[lid] = acc;
        workgroupBarrier();
        for (var half = WG_SIZE / 2u; half > 0u; half = half / 2u) {
            if (lid < half) {
                shared_acc0[lid] = max(shared_acc0[lid], shared_acc0[lid + half]);
            }
            workgroupBarrier();
        }
        if (lid == 0u && live) {
            let acc = shared_acc0[0];
            let folded = max(max(max(acc[0], acc[1]), acc[2]), acc[3]);
            w1_fuse(base_out, folded);
        }
    }
    storageBarrier();
    {
        let base_in = c0 * info[188u] + c1 * info[189u];
        let step = info[191u];
        let base_out = c0 * info[192u] + c1 * info[193u];
        var acc = vec4<f32>(0.0f);
        let steps = select(0u, info[190u], live);
        for (var k = lid; k < steps; k = k + WG_SIZE) {
            let v = r2_fuse((base_in + k * step) / 4u);
            acc = acc + v;
        }
        shared_acc1[lid] = acc;
        workgroupBarrier();
        for (var half = WG_SIZE / 2u; half > 0u; half = half / 2u) {
            if (lid < half) {
                shared_acc1[lid] = shared_acc1[lid] + shared_acc1[lid + half];
            }
            workgroupBarrier();
        }
        if (lid == 0u && live) {
            let acc = shared_acc1[0];
            let folded = acc[0] + acc[1] + acc[2] + acc[3];
            w3_fuse(base_out, folded);
        }
    }
    storageBarrier();
    {
        let base_in = c0 * info[196u] + c1 * info[197u];
        let step = info[199u];
        for (var k = lid; k < select(0u, info[198u], live); k = k + WG_SIZE) {
            e4_fuse((base_in + k * step) / 4u);
        }
    }
    storageBarrier();
}
