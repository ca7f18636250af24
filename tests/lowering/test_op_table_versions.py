"""The measured op table (torchneuron/lowering/op_table.py) is only true for the versions it was measured
with: an upgrade of torch, torch-mlir or jaxlib must re-run the sweep (tools/gen_op_coverage.py)."""

from importlib import metadata

import pytest
import torch

from torchneuron.lowering import op_table

INSTALLED = {
    "torch": torch.__version__,
    "torch-mlir": metadata.version("torch-mlir"),
    "jaxlib": metadata.version("jaxlib"),
}


@pytest.mark.parametrize("package", list(INSTALLED))
def test_op_table_was_measured_with_the_installed_version(package):
    recorded = op_table.GENERATED.get(package)
    assert recorded == INSTALLED[package], (
        f"op_table.py was measured with {package} {recorded}, but {INSTALLED[package]} is installed: "
        "re-run `python tools/gen_op_coverage.py` (the full sweep) and commit the new table and doc")
