"""One entry point for both back ends: ``compile(stablehlo, target=...)`` → a cached executable.

``target="sim"`` compiles for XLA:CPU (the simulator executes the same StableHLO a Trn host would compile);
``"trn1" | "trn2" | "trn3"`` runs neuronx-cc. The opt level defaults to -O1 for single eager ops and -O2 for
graphs (as AWS's backend does); ``NEURON_COMPILER_OPT_LEVEL`` overrides both. The LNC defaults to the
target's (``torchneuron.targets``); ``NEURON_LOGICAL_NC_CONFIG`` overrides it, as it does for libnrt.
``kind="check"`` (the simulator's cross-check reference, run once per program) compiles XLA:CPU with its
backend optimisations off: half the compile time, and run time does not matter there.
"""

from __future__ import annotations

from typing import Any, Literal

from .. import _env, targets
from . import keys, neuronx_cc, stablehlo_signature, xla_cpu
from .cache import CompileCache

SIM = "sim"
TARGETS = (SIM, *targets.TARGETS)

_DEFAULT_CACHE = CompileCache()


class CompileError(RuntimeError):
    """A back end rejected a module. The message names the back end, target and the fix."""


def default_cache() -> CompileCache:
    return _DEFAULT_CACHE


def _opt_level(kind: str, opt_level: int | None) -> int:
    if opt_level is not None:
        return int(opt_level)
    override = _env.get(_env.OPT_LEVEL).strip().lstrip("-O")
    if override:
        try:
            return int(override)
        except ValueError:
            raise ValueError(f"{_env.OPT_LEVEL}={_env.get(_env.OPT_LEVEL)!r} is not an optimisation level; "
                             "use 1, 2 or 3") from None
    return 1 if kind == "eager" else 2


def _lnc(hw_target: str, lnc: int | None) -> int:
    if lnc is not None:
        return int(lnc)
    override = _env.get(_env.LNC).strip()
    if override:
        try:
            return int(override)
        except ValueError:
            raise ValueError(f"{_env.LNC}={override!r} is not a logical NeuronCore config; use 1 or 2") from None
    return targets.named(hw_target).lnc


def resolve(target: str | None, lnc: int | None, opt_level: int | None, kind: str) -> tuple[str, str, int, int]:
    """(backend, hardware target, lnc, opt level) for a request."""
    target = (target or SIM).lower()
    if target not in TARGETS:
        raise ValueError(f"unknown compile target {target!r}; use one of {', '.join(TARGETS)}")
    hw = targets.current().name if target == SIM else target
    backend = xla_cpu.NAME if target == SIM else neuronx_cc.NAME
    return backend, hw, _lnc(hw, lnc), _opt_level(kind, opt_level)


def compile(stablehlo: str, *, target: str | None = SIM, lnc: int | None = None, opt_level: int | None = None,
            kind: Literal["eager", "graph", "check"] = "graph", cache: CompileCache | None = None) -> Any:
    """Compile (or fetch from the cache) a StableHLO module; returns an executable with ``run(host_tensors)``."""
    backend, hw, lnc_v, opt = resolve(target, lnc, opt_level, kind)
    cache = cache or _DEFAULT_CACHE
    if backend == xla_cpu.NAME:
        quick = kind == "check"
        key = keys.cache_key(stablehlo, backend=backend, target=hw, lnc=lnc_v, opt_level=0 if quick else opt,
                             compiler_version=xla_cpu.version())

        def build() -> bytes:
            try:
                return xla_cpu.compile_to_bytes(stablehlo, optimise=not quick)
            except xla_cpu.XlaCompileError as e:
                raise CompileError(f"{e}\n(back end xla-cpu, simulating {hw}; the module is in "
                                   "Lowered.stablehlo — please report it with the op that produced it)") from None

        return cache.get_or_compile(key, build, xla_cpu.load)

    try:
        signature = stablehlo_signature.parse(stablehlo)
    except stablehlo_signature.SignatureError as e:
        raise CompileError(f"cannot compile for {hw}: {e}") from None
    flags = neuronx_cc.extra_flags()
    key = keys.cache_key(stablehlo, backend=backend, target=hw, lnc=lnc_v, opt_level=opt,
                         compiler_version=neuronx_cc.version(), extra_flags=flags)

    def build_neff() -> bytes:
        try:
            return neuronx_cc.compile_to_bytes(stablehlo, target=hw, lnc=lnc_v, opt_level=opt)
        except neuronx_cc.NeuronxCcError as e:
            raise CompileError(str(e)) from None

    return cache.get_or_compile(key, build_neff, lambda b: neuronx_cc.NeffExecutable(b, hw, lnc_v, signature))
