// Every ATen op without a neuron-specific kernel runs here (boxedOpKernel, see BoxedHostKernel.h). On the
// simulator the op's host (CPU) kernel executes directly on the device buffers: inputs are zero-copy host
// aliases of the neuron tensors, outputs are allocated in device memory while the kernel runs
// (CaptureOutputsOnDevice), and the op is ordered on the current stream. Nothing is copied to the host and back.
#include "aten/native/BoxedHostKernel.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <sstream>

#include "aten/native/Fp64Emulation.h"
#include "aten/native/HostCall.h"
#include "aten/native/HostResults.h"
#include "aten/native/OpRegistry.h"
#include "device/Generator.h"

namespace torchneuron {

namespace {
thread_local bool t_in_executor = false;

void analyse(OpEntry& entry, const c10::FunctionSchema& schema) {
  std::call_once(entry.analysed, [&] {
    for (const auto& arg : schema.arguments()) {
      entry.writes.push_back(arg.alias_info() != nullptr && arg.alias_info()->isWrite());
      const auto& type = arg.type();
      bool gen = false, index_list = false;
      if (auto opt = type->castRaw<c10::OptionalType>()) {
        gen = opt->getElementType()->kind() == c10::TypeKind::GeneratorType;
      } else if (auto list = type->castRaw<c10::ListType>()) {
        index_list = list->getElementType()->kind() == c10::TypeKind::OptionalType;
      }
      entry.is_generator.push_back(gen);
      entry.is_index_list.push_back(index_list);
    }
  });
}

std::string describeInputs(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  std::ostringstream out;
  bool first = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isTensor()) continue;
    const auto& t = args[i].toTensor();
    if (!t.defined()) continue;
    out << (first ? "" : ", ") << schema.arguments()[i].name() << ": " << t.device() << " " << t.scalar_type()
        << " " << t.sizes();
    first = false;
  }
  return first ? "no tensor inputs" : out.str();
}

[[noreturn]] void refuse(const OpEntry& entry, const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  TORCH_CHECK(false, *entry.refusal, " (inputs: ", describeInputs(schema, args), ")");
}

// PyTorch has kernels for this op only on backends other than dense CPU tensors (in a CPU build of PyTorch
// the ones it has are listed; CUDA-only ops, e.g. cudnn_*, _fused_dropout, list none), so the host path has
// nothing to run. Without this the user would read the dispatcher's "Could not run ... 'CPU' backend".
[[noreturn]] void refuseWithoutHostKernel(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  std::ostringstream others;
  for (auto key : {c10::DispatchKey::SparseCPU, c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::QuantizedCPU,
                   c10::DispatchKey::NestedTensorCPU, c10::DispatchKey::MkldnnCPU}) {
    if (op.hasKernelForDispatchKey(key)) others << (others.tellp() > 0 ? ", " : "") << key;
  }
  const std::string where = others.tellp() > 0 ? "only for " + others.str() + " tensors"
                                               : "only for GPU backends (CUDA, ROCm, XPU, MPS)";
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().operator_name(), " is not supported on the neuron device: ",
                              "PyTorch implements it ", where, ", with no kernel for dense CPU tensors, which is ",
                              "what neuron's eager path runs. Inputs: ", describeInputs(op.schema(), args),
                              ". Use an equivalent portable op, or report the op to torchneuron.");
}

void checkPolicy(OpEntry& entry) {
  if (auto policy = opPolicy()) {
    auto refusal = policy(entry.name);
    if (refusal) entry.refusal = std::move(refusal);
  }
  entry.policy_checked.store(true, std::memory_order_release);
}

void runOnHost(const c10::OperatorHandle& op, OpEntry& entry, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;

  DeviceCheck check(entry.name);
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    const std::string& arg = schema.arguments()[i].name();
    if (v.isTensor()) {
      // PyTorch names host-side tensor arguments cpu_* (_nested_from_padded's cpu_nested_shape_example).
      check.see(v.toTensor(), arg, arg.rfind("cpu_", 0) == 0);
    } else if (v.isTensorList()) {
      for (const c10::IValue& e : v.toListRef()) check.see(e.toTensor(), arg, false);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) check.see(e.toTensor(), arg, entry.is_index_list[i]);
      }
    }
  }
  HostCall call(entry, check.finish());
  const c10::DeviceIndex device = call.device();

  // The kernel gets its own stack of host arguments; the caller's stay where they are until the results are
  // converted (HostCall refers to them by pointer).
  torch::jit::Stack host;
  host.reserve(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    const bool written = entry.writes[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      host.emplace_back(t.defined() && t.device().is_privateuseone() ? call.toHost(t, written) : t);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      list.reserve(v.toListRef().size());
      for (const c10::IValue& e : v.toListRef()) {
        const at::Tensor& t = e.toTensor();
        list.push_back(t.defined() && t.device().is_privateuseone() ? call.toHost(t, written) : t);
      }
      host.emplace_back(std::move(list));
    } else if (v.isList() && entry.is_index_list[i]) {
      c10::List<std::optional<at::Tensor>> list;
      for (const c10::IValue& e : v.toListRef()) call.appendIndex(list, e, written);
      host.emplace_back(std::move(list));
    } else if (v.isDevice() && v.toDevice().is_privateuseone()) {
      host.emplace_back(c10::Device(c10::DeviceType::CPU));
    } else if (entry.is_generator[i] && v.isNone()) {
      // Random ops draw from the neuron device's generator, never from the CPU's.
      host.emplace_back(static_cast<NeuronGenerator*>(defaultGenerator(device).unsafeGetGeneratorImpl())->engine());
    } else if (entry.is_generator[i] && v.isGenerator() && v.toGenerator().device().is_privateuseone()) {
      host.emplace_back(static_cast<NeuronGenerator*>(v.toGenerator().unsafeGetGeneratorImpl())->engine());
    } else {
      host.push_back(v);
    }
  }

  call.run([&] { op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &host); });

  returnResults(host, stack, nargs, [&](at::Tensor t) { return call.toDevice(std::move(t)); });
}

// The op's executor: the lowered-eager one when installed (TORCHNEURON_EAGER=lowered), else the host kernel.
void execute(const c10::OperatorHandle& op, OpEntry& entry, torch::jit::Stack* stack) {
  if (auto executor = eagerExecutor(); executor != nullptr && !t_in_executor) {
    t_in_executor = true;
    bool handled = false;
    try {
      handled = executor(op, stack);
    } catch (...) {
      t_in_executor = false;
      throw;
    }
    t_in_executor = false;
    if (handled) return;
  }
  try {
    runOnHost(op, entry, stack);
  } catch (const c10::NotImplementedError&) {
    // Checked only on failure: the hot path pays nothing for it.
    if (!op.hasComputedKernelForDispatchKey(c10::DispatchKey::CPU)) {
      refuseWithoutHostKernel(op, torch::jit::last(*stack, op.schema().arguments().size()));
    }
    throw;
  }
}
} // namespace

bool directHostPath(const c10::OperatorHandle& op, OpEntry& entry) {
  const uint32_t epoch = routingEpoch();
  if (C10_LIKELY(entry.direct_epoch.load(std::memory_order_relaxed) == epoch)) return true;
  analyse(entry, op.schema());
  if (!entry.policy_checked.load(std::memory_order_acquire)) checkPolicy(entry);
  const bool direct = !entry.refusal.has_value() && eagerExecutor() == nullptr;
  if (direct) entry.direct_epoch.store(epoch, std::memory_order_relaxed);
  return direct;
}

void boxedOpKernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  OpEntry& entry = opEntry(op);
  countExecution(entry);
  analyse(entry, op.schema());
  if (C10_UNLIKELY(!entry.policy_checked.load(std::memory_order_acquire))) checkPolicy(entry);
  if (C10_UNLIKELY(entry.refusal.has_value())) {
    refuse(entry, op.schema(), torch::jit::last(*stack, op.schema().arguments().size()));
  }
  // The float64 rule sits in front of both executors, so host and lowered execution agree bit for bit.
  if (emulateFp64(op, stack, [&](torch::jit::Stack* s) { execute(op, entry, s); })) return;
  execute(op, entry, stack);
}

} // namespace torchneuron
