// no fused kernel: every op runs unfused
