"""The contract fake's ``neuronx-cc``: the documented command line in, a fake NEFF (neff_format.py) out.

    neuronx-cc compile <module.mlir> --framework XLA --target <trn1|trn2|trn3> [--lnc|--logical-nc-config <1|2>]
        [-O<1|2|3>|--optlevel <n>] [--model-type ...] [--auto-cast ...] [other documented flags] --output <file.neff>

It refuses what the real compiler refuses for a command line or module (exit status 1, message on stderr):
another framework, an unknown target, an LNC trn1 cannot run, a module that is not StableHLO or has dynamic
shapes. Invocations are appended as JSON lines to ``$FAKE_NEURONX_CC_LOG`` when that is set (for tests).
Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

from neff_format import write  # type: ignore[import-not-found]  (the fake's own copy, on sys.path)
from stablehlo_signature import SignatureError  # type: ignore[import-not-found]

VERSION = "NeuronX Compiler version 2.99.0+torchneuron.fake"
TARGETS = ("trn1", "trn2", "trn3")
# Documented flags that take a value (the rest are switches). `--flag=value` works for all of them.
WITH_VALUE = {"--framework", "--target", "--lnc", "--logical-nc-config", "--optlevel", "--model-type", "--auto-cast",
              "--auto-cast-type", "--native-int64", "--distribution-strategy", "--logfile", "--verbose", "--output",
              "--workdir"}


def fail(message: str) -> int:
    print(f"ERROR neuronx-cc: {message}", file=sys.stderr)
    return 1


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    files: list[str] = []
    opts: dict[str, str] = {}
    it = iter(argv)
    for a in it:
        if a.startswith("-O") and len(a) == 3:
            opts["--optlevel"] = a[2:]
        elif a.startswith("--"):
            name, eq, value = a.partition("=")
            if name in WITH_VALUE and not eq:
                value = next(it, "")
            opts[name] = value if (eq or name in WITH_VALUE) else "1"
        else:
            files.append(a)
    return files, opts


def main(argv: list[str]) -> int:
    if argv in (["--version"], ["-V"]):
        print(VERSION)
        return 0
    log = os.environ.get("FAKE_NEURONX_CC_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(argv) + "\n")
    if not argv or argv[0] != "compile":
        return fail("usage: neuronx-cc compile <model file> --framework XLA --target <target> --output <neff>")
    files, opts = parse_args(argv[1:])
    if len(files) != 1 or not os.path.exists(files[0]):
        return fail(f"expected one model file, got {files}")
    if opts.get("--framework") != "XLA":
        return fail(f"--framework must be XLA, got {opts.get('--framework')!r}")
    target = opts.get("--target", "")
    if target not in TARGETS:
        return fail(f"--target must be one of {', '.join(TARGETS)}, got {target!r}")
    lnc = opts.get("--lnc", opts.get("--logical-nc-config", "1" if target == "trn1" else "2"))
    if lnc not in ("1", "2") or (target == "trn1" and lnc != "1"):
        return fail(f"logical NeuronCore config {lnc!r} is not valid for {target}")
    opt = opts.get("--optlevel", "2")
    if opt not in ("1", "2", "3"):
        return fail(f"-O must be 1, 2 or 3, got {opt!r}")
    out = opts.get("--output")
    if not out:
        return fail("--output <file.neff> is required")
    with open(files[0]) as f:
        text = f.read()
    if "stablehlo." not in text and "func.func" not in text:
        return fail(f"{files[0]} is not a StableHLO module")
    try:
        neff = write(text, target=target, lnc=int(lnc), opt_level=int(opt))
    except SignatureError as e:
        return fail(str(e))
    with open(out, "wb") as f:
        f.write(neff)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
