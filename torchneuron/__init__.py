"""torchneuron: placeholder while the device layer is being built (replaced by the lead)."""
