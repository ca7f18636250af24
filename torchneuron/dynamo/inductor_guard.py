"""What inductor (``torch.compile``'s default backend) finds when it is asked to compile neuron tensors.

Inductor generates Triton or C++ for the devices it knows; it has no code generator for NeuronCores. It looks
one up on the device module (``torch.neuron.Scheduling`` etc., PyTorch's PrivateUse1 hook), and the classes
here turn its ``KeyError: 'neuron'`` into an error that names the fix. Imported only by inductor, lazily.
"""

from __future__ import annotations

from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides

MESSAGE = ("torch.compile's default backend (inductor) cannot generate code for the neuron device. "
           "Compile with torch.compile(model, backend=\"neuron\"): it lowers the graph to StableHLO and runs it "
           "on the NeuronCore (on the simulator: XLA:CPU).")


class NeuronInductorError(RuntimeError):
    pass


class _RefuseAttributes(type):
    # inductor reads class attributes (supports_caching, ...) before it instantiates anything
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NeuronInductorError(MESSAGE)


class _Refuse(metaclass=_RefuseAttributes):
    def __init__(self, *args, **kwargs):
        raise NeuronInductorError(MESSAGE)

    @staticmethod
    def create(*args, **kwargs):
        raise NeuronInductorError(MESSAGE)


class Scheduling(_Refuse):
    pass


class PythonWrapperCodegen(_Refuse):
    pass


class CppWrapperCodegen(_Refuse):
    pass


class WrapperFxCodegen(_Refuse):
    pass


class _NeuronOpOverrides(DeviceOpOverrides):
    pass


register_device_op_overrides("neuron", _NeuronOpOverrides())
