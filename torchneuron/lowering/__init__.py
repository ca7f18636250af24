"""ATen/FX → StableHLO lowering, shared by strict eager mode, ``torchneuron.lower`` and torch.compile.

Modules (one concern each):

- ``decompositions``  the Neuron decomposition table (what ATen ops are rewritten before lowering)
- ``passes``          small named FX passes run before import (static shapes, constants → arguments, outputs)
- ``fx_to_stablehlo`` an ATen FX graph → StableHLO text through torch-mlir's FX importer
- ``trace``           a function / module / GraphModule → a core-ATen FX graph with parameters as inputs
- ``api``             ``lower()`` / ``Lowered`` / ``load_lowered()``
- ``single_op``       one eager op → a cached executable keyed by (op, shapes, dtypes, static args)
- ``eager``           strict eager mode (``TORCHNEURON_EAGER=lowered``): the eager executor
- ``coverage``        ``fallback_ops()`` and the op policy, driven by the generated ``op_table``

Importing this package (and ``coverage``/``op_table``) must stay cheap: torch-mlir and jaxlib are imported
only when something is lowered or compiled.
"""
