"""The Trn-host transport (Neuron collectives through nrt), run against the contract fake: every collective
of the suite, built from the runtime's five primitives, matches the CPU reference."""

from __future__ import annotations

import faulthandler
import os

import fake_nrt
import torch
import torch.distributed as dist
from collectives import Suite

from torchneuron.distributed import backend
from torchneuron.distributed.nrt_transport import NrtTransport


def factory(store, rank, size, timeout, group_name):
    return NrtTransport.create(store, rank, size, timeout, group_name,
                               runtime=lambda root, r, n, g: fake_nrt.FakeCollectives(store, r, n, timeout))


def main() -> None:
    faulthandler.dump_traceback_later(200, exit=True)  # a hang in the composition shows where it is
    backend._transport_factory = factory
    dist.init_process_group("neuron")
    checks = Suite().run()
    checks.values["root_comm_id"] = os.environ.get("NEURON_RT_ROOT_COMM_ID")
    checks.values["primitives"] = sorted(set(fake_nrt.CALLS))
    checks.values["transport"] = dist.group.WORLD._get_backend(torch.device("neuron")).impl.transport.description
    checks.write()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
