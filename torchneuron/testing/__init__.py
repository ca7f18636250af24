"""Test helpers for code that runs on the neuron device, shipped so downstream projects can use them too.

- ``torchneuron.testing.fake_nrt``: a contract fake of the Trn host's two external pieces, libnrt and
  ``neuronx-cc``, so the ``nrt`` runtime (and a user's own CI) runs end to end on any Linux machine.
"""
