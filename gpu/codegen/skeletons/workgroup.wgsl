${enable}// fuselab kernel: ${kernel}
override WG_SIZE: u32 = 64u;

${bindings}
var<workgroup> scratch: array<${scratch_type}, WG_SIZE>;
${helpers}
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // One partial result per workgroup: no early return, barriers need uniform control flow.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let groups = nwg.x * nwg.y * nwg.z;
${body}
}
