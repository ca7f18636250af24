"""The front end: a function, module or ATen FX graph → StableHLO text. Pure: it needs neither the device
(``_C``) nor a compiler; running what it produces is ``torchneuron.programs``' job.

Modules (one concern each):

- ``decompositions``  assembles the Neuron decomposition table from the ``decomp_*`` families (``decomp_common``:
                      helpers several families share)
- ``passes``          the one pass pipeline run before import (``PIPELINE``: static shapes, input mutations,
                      constants → arguments, flat outputs)
- ``fx_to_stablehlo`` a prepared ATen FX graph → StableHLO text through torch-mlir's FX importer
- ``trace``           a function / module / GraphModule → a core-ATen FX graph with parameters as inputs
- ``errors``          lowering errors; ``Unsupported`` carries a kind callers branch on
- ``coverage``        which ops have a lowering, driven by the generated ``op_table``; an overload's Scalar →
                      Tensor twin
- ``attention``, ``variance``  lowering-friendly forms of fused attention and variance

Importing this package (and ``coverage``/``op_table``) must stay cheap: torch-mlir and jaxlib are imported
only when something is lowered or compiled.
"""
