"""The kernel library: NKI kernels, each with a NumPy reference. Importing a kernel module needs only the
simulator (NumPy + ml_dtypes), never the neuron device."""

KERNELS = ("add", "matmul", "transpose", "softmax", "rmsnorm", "layernorm", "attention")
