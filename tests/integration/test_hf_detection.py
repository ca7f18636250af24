"""How Hugging Face libraries find the neuron device: the `torch_neuronx` alias (torchneuron._neuronx_alias).

accelerate and transformers detect Neuron with importlib.util.find_spec("torch_neuronx") and then
torch.neuron.is_available(). The alias answers that lookup only when AWS's package is not installed, and by
default only while no CUDA device is available."""

import importlib
import importlib.abc
import importlib.util
import os
import sys
import textwrap

import pytest
import torch

from tests.helpers import run_python
from torchneuron import _neuronx_alias


@pytest.fixture
def fresh(monkeypatch):
    """Forget any imported torch_neuronx (and what materialising it set up)."""
    _neuronx_alias.reset()
    monkeypatch.delitem(sys.modules, "torch_neuronx", raising=False)
    yield
    _neuronx_alias.reset()
    sys.modules.pop("torch_neuronx", None)


def test_the_name_resolves_to_the_alias(fresh):
    spec = importlib.util.find_spec("torch_neuronx")
    assert spec is not None and spec.origin == "torchneuron alias"
    mod = importlib.import_module("torch_neuronx")
    assert mod.__torchneuron_alias__ and mod.__version__
    assert mod.device_count() == torch.neuron.device_count()  # AWS TorchNeuron's API (test_torch_neuronx_api.py)
    with pytest.raises(AttributeError, match=r"XLA-based torch-neuronx.*backend='neuron'"):
        mod.trace  # noqa: B018  (the XLA-era API is not pretended)


def test_a_real_torch_neuronx_is_never_shadowed(tmp_path, fresh, monkeypatch):
    pkg = tmp_path / "torch_neuronx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert importlib.util.find_spec("torch_neuronx").origin == str(pkg / "__init__.py")
    assert importlib.import_module("torch_neuronx").REAL


def test_a_finder_added_after_the_alias_still_wins(tmp_path, fresh):
    """An editable install registers its own meta-path finder; one added after torchneuron's is asked first."""
    source = tmp_path / "real_neuronx.py"
    source.write_text("REAL = 'editable'\n")

    class EditableFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname != "torch_neuronx":
                return None
            return importlib.util.spec_from_file_location(fullname, source)

    finder = EditableFinder()
    sys.meta_path.append(finder)
    try:
        assert sys.meta_path.index(finder) > next(i for i, f in enumerate(sys.meta_path)
                                                  if isinstance(f, _neuronx_alias.AliasFinder))
        assert importlib.util.find_spec("torch_neuronx").origin == str(source)
        assert importlib.import_module("torch_neuronx").REAL == "editable"
    finally:
        sys.meta_path.remove(finder)


_WITH_AWS_PACKAGE = textwrap.dedent("""
    import torch, torch_neuronx
    from accelerate.utils import is_neuron_available
    from transformers.utils import is_torch_neuron_available
    print(torch_neuronx.__file__, getattr(torch_neuronx, "__torchneuron_alias__", False),
          torch_neuronx.REAL, is_neuron_available(), is_torch_neuron_available())
""")


def test_hf_libraries_get_aws_package_when_it_is_installed(tmp_path):
    """A host with AWS's torch_neuronx: the libraries import that package, never the alias, in a fresh process
    where torchneuron is autoloaded by `import torch` (before the package is first imported)."""
    pytest.importorskip("accelerate")
    pkg = tmp_path / "torch_neuronx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("REAL = 'aws'\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    out = run_python(_WITH_AWS_PACKAGE, PYTHONPATH=path)
    assert out.stdout.split() == [str(pkg / "__init__.py"), "False", "aws", "True", "True"]


@pytest.mark.parametrize("value, cuda, expected", [("auto", False, True), ("auto", True, False),
                                                    ("1", True, True), ("0", False, False)])
def test_when_the_alias_applies(monkeypatch, fresh, value, cuda, expected):
    monkeypatch.setenv("TORCHNEURON_NEURONX_ALIAS", value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert _neuronx_alias.applies() is expected
    assert (importlib.util.find_spec("torch_neuronx") is not None) is expected


def test_a_bad_setting_is_named(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NEURONX_ALIAS", "maybe")
    with pytest.raises(ValueError, match="TORCHNEURON_NEURONX_ALIAS='maybe'.*auto, 1 or 0"):
        _neuronx_alias.applies()


_LIBRARIES = textwrap.dedent("""
    import torch
    from accelerate.state import PartialState
    from accelerate.utils import is_neuron_available
    from transformers.utils import is_torch_bf16_gpu_available, is_torch_neuron_available
    print(is_neuron_available(), is_torch_neuron_available(), is_torch_bf16_gpu_available(),
          PartialState().device)
""")


def test_accelerate_and_transformers_detect_neuron_in_a_fresh_process():
    pytest.importorskip("accelerate")
    out = run_python(_LIBRARIES)
    assert out.stdout.split() == ["True", "True", "True", "neuron"]


def test_a_program_that_never_asks_is_unchanged():
    """Importing torch (which autoloads torchneuron) imports no torch_neuronx and no HF library."""
    code = ("import sys, torch; print(sorted(m for m in ('torch_neuronx', 'transformers', 'accelerate') "
            "if m in sys.modules))")
    out = run_python(code)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]"] + [f"w{i}" for i in range(60)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")


def test_pipeline_runs_on_neuron_when_asked():
    """transformers 5.24's pipeline() picks CUDA/NPU/XPU/MPS by itself but has no Neuron branch, so an unset
    device means the CPU there (see docs/integrations.md); device="neuron" runs it on neuron, with the CPU's
    result."""
    transformers = pytest.importorskip("transformers")
    from .hf_models import gpt2

    torch.manual_seed(0)
    model = gpt2().eval()
    results = {}
    for device in ("cpu", "neuron"):
        pipe = transformers.pipeline("text-generation", model=model, tokenizer=_tokenizer(), device=device)
        assert pipe.device.type == device and next(pipe.model.parameters()).device.type == device
        results[device] = pipe("w1 w2 w3", max_new_tokens=4, do_sample=False)[0]["generated_text"]
    assert results["neuron"] == results["cpu"]
