"""The SciTaste-Bench dataset builder (``scitaste build``): collect -> snowball -> fuse, classify and check ->
index -> sample -> publish, run as resumable stages by :mod:`scitaste_hf.builder.pipeline`."""
