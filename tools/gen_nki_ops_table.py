#!/usr/bin/env python
"""Regenerate docs/nki_ops.md: the cost-model estimate of every nki_ops kernel (trn2) against its roofline,
and the kernels' tile limits (nki_ops/estimates.py). A few minutes on a loaded 2-core machine.

    python tools/gen_nki_ops_table.py            # writes docs/nki_ops.md
    python tools/gen_nki_ops_table.py --check    # exit 1 if the page is not current
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "nki_ops.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn2"
    from nki_ops import estimates

    text = estimates.markdown()
    if args.check:
        same = DOC.exists() and DOC.read_text() == text
        print("docs/nki_ops.md is current" if same else "docs/nki_ops.md is stale: run tools/gen_nki_ops_table.py")
        return 0 if same else 1
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
