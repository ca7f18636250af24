"""Code the tests, the tools, the benchmarks and downstream projects share (as ``torch.testing`` is for
PyTorch): the op-coverage sweep's checker (``opinfo_sweep``), the renderer of ``docs/op_coverage.md``
(``coverage_doc``), the small models the end-to-end tests and benchmarks train (``models``), and
``fake_nrt``, a contract fake of the Trn host's two external pieces, libnrt and ``neuronx-cc``, so the ``nrt``
runtime (and a user's own CI) runs end to end on any Linux machine (``docs/nrt.md``). Nothing here is imported
by the package itself; ``opinfo_sweep`` imports PyTorch's OpInfo database (``torch.testing._internal``) only
when it runs.
"""
