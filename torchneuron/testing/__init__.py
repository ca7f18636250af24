"""Code the tests, the tools and the benchmarks share (as ``torch.testing`` is for PyTorch): the op-coverage
sweep's checker (``opinfo_sweep``), the renderer of ``docs/op_coverage.md`` (``coverage_doc``) and the small
models the end-to-end tests and benchmarks train (``models``). Nothing here is imported by the package itself;
``opinfo_sweep`` imports PyTorch's OpInfo database (``torch.testing._internal``) only when it runs.
"""
