"""The error band of ``torchneuron.estimate``: every calibration point (``calibration.py``) lies within it, and
cost figures carry it."""

BAND = 0.25
