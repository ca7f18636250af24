"""Compiled programs on neuron tensors: how StableHLO from ``torchneuron.lowering`` runs on the device.

Modules (one concern each):

- ``host_bridge``   neuron tensors as host views for XLA:CPU and its results adopted back (no copies); a NEFF
                    run on device tensors
- ``nrt_layout``    strided device tensors made dense on the device before a NEFF reads them (nrt runtime)
- ``lowered``       ``lower()`` / ``Lowered`` / ``load_lowered()``: a whole function as one program
- ``single_op``     one eager op → a compiled program, cached by (op, shapes, dtypes, static args)
- ``op_index``      the on-disk index of single-op programs: a new process skips tracing and torch-mlir
- ``strict_eager``  strict eager mode (``TORCHNEURON_EAGER=lowered``): every eager op a single-op program
- ``nrt_eager``     eager ops on the nrt runtime: every op a NEFF, or the CPU
- ``fallbacks``     ops without a lowering at run time: ``fallback_ops()`` and the op policy (warn, refuse)

Importing this package (and ``fallbacks``) must stay cheap: the op policy is installed at ``import torchneuron``.
"""
