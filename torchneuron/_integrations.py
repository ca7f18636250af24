"""Optional subsystems switched on at import: each must stay cheap (no torch-mlir or jax import here)."""

from __future__ import annotations

from torchneuron import _env


def install() -> None:
    # `import nki` / `import neuronxcc.nki` -> torchneuron.nki when asked and those packages are absent. The
    # only place the variable is honoured: `import torchneuron.nki` runs this first (its parent package).
    if _env.flag(_env.NKI_ALIASES):
        from torchneuron.nki import aliases

        aliases.install_import_aliases()
    # `torch_neuronx` for HF accelerate/transformers' Neuron detection, when AWS's package is absent. Only a
    # finder appended to sys.meta_path here; whether it answers is decided when a library asks.
    from torchneuron import _neuronx_alias

    _neuronx_alias.install()
    # The first torch.compile(backend="neuron") in several threads at once: only a finder for Dynamo's
    # backend registry here, which patches it when (if ever) it is imported; patched at once when Dynamo
    # came first (autoload off). Every import of torchneuron.dynamo runs this first (its parent package).
    from torchneuron import _dynamo_registry

    _dynamo_registry.install()
    # Fallback policy: warns once per executed op that has no StableHLO lowering, or refuses it.
    from torchneuron.programs import fallbacks

    fallbacks.install_policy()
    # Strict eager mode: every op through lowering + XLA:CPU.
    if _env.get(_env.EAGER) == "lowered":
        from torchneuron.programs import strict_eager

        strict_eager.install()
    elif _env.get(_env.EAGER) != "host":
        raise ValueError(f"TORCHNEURON_EAGER={_env.get(_env.EAGER)!r}: expected 'host' or 'lowered'")
