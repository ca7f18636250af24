"""``python -m torchneuron.testing.fake_nrt DIR``: build the contract fake and print how to use it."""

from __future__ import annotations

import argparse
import sys

from . import BuildError, build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchneuron.testing.fake_nrt", description=__doc__)
    parser.add_argument("directory", help="where to build (DIR/lib/libnrt.so.1, DIR/bin/neuronx-cc)")
    parser.add_argument("--target", default="trn2", help="trn1, trn2 or trn3 (default trn2)")
    parser.add_argument("--chips", type=int, default=1, help="Trainium chips of the modelled instance (default 1)")
    parser.add_argument("--version", default="2.99.0", help="the libnrt version it reports (default 2.99.0)")
    parser.add_argument("--env", action="store_true",
                        help="print NAME=value lines with the paths resolved (for $GITHUB_ENV or an env file)")
    args = parser.parse_args(argv)
    try:
        fake = build(args.directory, target=args.target, chips=args.chips, version=args.version)
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    if args.env:
        env = fake.env()
        for name in ("LD_LIBRARY_PATH", "PATH", "TORCHNEURON_RUNTIME"):
            print(f"{name}={env[name]}")
        return 0
    print(f"# contract fake of libnrt + neuronx-cc for {fake.instance} in {fake.root}")
    print(f"export LD_LIBRARY_PATH={fake.lib_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")
    print(f"export PATH={fake.bin_dir}:$PATH")
    print("export TORCHNEURON_RUNTIME=nrt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
