timeout 280 python3 benchmarks/chip/profile_trace.py -o $OUT/profile.json  # (the kernel then written out in the script; now kernels.matmul, the same tiling)
