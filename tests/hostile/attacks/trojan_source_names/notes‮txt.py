# not the kernel
