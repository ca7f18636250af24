#pragma once
// Trainium's dtype rule for float64 (DESIGN.md, Fidelity): NeuronCores have no fp64 arithmetic, so an eager
// op on float64 neuron tensors computes in float32 and its float64 results are stored back as float64 (the
// values carry float32 precision). Ops that only move or select data (copies, cat, indexing, views) keep
// every bit. TORCHNEURON_FP64=native turns the rule off (float64 computed in float64, as on the CPU).
//
// The rule is applied here once, in front of whichever executor runs the op (the host kernel, or the
// lowered-eager executor of TORCHNEURON_EAGER=lowered), so both give the same bits. Its table (the exempt
// data-movement ops) and its mode are Python's (torchneuron/fp64_rule.py), passed in at import.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <functional>
#include <string>
#include <vector>

namespace torchneuron {

enum class Fp64Mode { Emulate, Native };

// Sets the mode and the ops ("aten::cat", or "aten::scatter.src" for one overload) whose float64 arguments
// are never converted. Until it is called: Emulate, with no exempt ops.
void configureFp64(Fp64Mode mode, std::vector<std::string> exempt_ops);
Fp64Mode fp64Mode();

// Called by the boxed kernel (BoxedHostKernel.h) before it runs an op. When the op computes on float64 (a float64 neuron
// tensor argument, or a float64 dtype argument) and the mode is Emulate, it runs the op through `run` with
// float32 copies of those arguments, converts the results to the dtypes the op would have returned, writes
// mutated arguments back into the caller's float64 tensors, leaves the results on the stack and returns
// true. Otherwise it returns false and leaves the stack untouched. Warns once per process, naming the op.
bool emulateFp64(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                 const std::function<void(torch::jit::Stack*)>& run);

// Whether the op being emulated was called by PyTorch's own code rather than the user's (torch._tensor_str
// converts to float64 to format a tensor): the once-per-process float64 notice is then not spent on it. The
// Python bindings install the check (it reads the Python call stack); without one every call counts.
using Fp64CallerIsInternalFn = bool (*)();
void setFp64CallerIsInternal(Fp64CallerIsInternalFn fn);

} // namespace torchneuron
