${enable}// fuselab elemwise_fuse: ${kernel}
override WG_SIZE: u32 = 64u;

${bindings}
${helpers}
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
${body}
    // Fuse on write end
}
