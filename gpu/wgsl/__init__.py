"""WGSL text generation: types (``types``), the expression table (``ops``), skeletons."""
