"""ATen/FX → StableHLO lowering, shared by strict eager mode, ``torchneuron.lower`` and torch.compile.

Modules (one concern each):

- ``decompositions``  assembles the Neuron decomposition table from the ``decomp_*`` families (``decomp_common``:
                      helpers several families share)
- ``passes``          the one pass pipeline run before import (``PIPELINE``: static shapes, input mutations,
                      constants → arguments, flat outputs)
- ``fx_to_stablehlo`` a prepared ATen FX graph → StableHLO text through torch-mlir's FX importer
- ``trace``           a function / module / GraphModule → a core-ATen FX graph with parameters as inputs
- ``host_bridge``     neuron tensors as host views for XLA:CPU and its results adopted back (no copies)
- ``errors``          lowering errors; ``Unsupported`` carries a kind callers branch on
- ``api``             ``lower()`` / ``Lowered`` / ``load_lowered()``
- ``single_op``       one eager op → a cached executable keyed by (op, shapes, dtypes, static args)
- ``eager``           strict eager mode (``TORCHNEURON_EAGER=lowered``): the eager executor
- ``coverage``        ``fallback_ops()`` and the op policy, driven by the generated ``op_table``

Importing this package (and ``coverage``/``op_table``) must stay cheap: torch-mlir and jaxlib are imported
only when something is lowered or compiled.
"""
