"""`python -m torchneuron.nki.calibration [version ...]`: the calibration table as JSON."""

import sys

from . import main

main(sys.argv[1:])
