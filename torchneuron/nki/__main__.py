"""`python -m torchneuron.nki script.py [args]`: run an NKI script with the import aliases installed, so
`import nki` / `import neuronxcc.nki` resolve to the simulator when the Neuron SDK is absent."""

from __future__ import annotations

import runpy
import sys

from .aliases import install_import_aliases


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: python -m torchneuron.nki SCRIPT [ARGS...]", file=sys.stderr)
        raise SystemExit(2)
    install_import_aliases()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
