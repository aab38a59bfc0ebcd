${enable}// fuselab reduce_fuse: ${kernel}
override WG_SIZE: u32 = 64u;

${bindings}
${helpers}
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) plane: u32) {
    // The workgroup's linear index over a grid folded past 65535 workgroups per dimension;
    // one plane (subgroup) per group, planes striding over the groups.
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
${body}
}
