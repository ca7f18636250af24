// float64 on neuron: stored as float64, computed in float32 (see Fp64Emulation.h). Which ops are exempt (data
// movement) and whether the rule is on come from Python (torchneuron/fp64_rule.py, the one table both eager
// executors follow), never from the environment.
//
// The result dtypes come from the op's Meta kernel run on the original arguments, so type promotion is the
// op's own (a 0-dim float64 tensor does not turn a float32 result into float64; sum(x, dtype=float64) does
// return float64). Ops without a Meta kernel fall back to a simple rule: a float32 result of an op that saw
// float64 is float64. When the Meta kernel rejects the arguments (a genuine error, e.g. mm of float64 with
// float32) the op runs unconverted, so the user gets PyTorch's own error.
#include "aten/native/Fp64Emulation.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace torchneuron {

namespace {
std::atomic<bool> g_emulate{true};  // the documented default, until Python configures the rule at import
std::mutex g_exempt_mutex;
// Replaced, never mutated: readers take a reference to the current set under the lock, then read it freely.
std::shared_ptr<const std::unordered_set<std::string>> g_exempt = std::make_shared<const std::unordered_set<std::string>>();
std::atomic<bool> g_warned{false};
std::atomic<Fp64CallerIsInternalFn> g_internal_caller{nullptr};
thread_local bool t_emulating = false;

std::shared_ptr<const std::unordered_set<std::string>> exemptOps() {
  std::lock_guard<std::mutex> lock(g_exempt_mutex);
  return g_exempt;
}

bool isDoubleOnNeuron(const at::Tensor& t) {
  return t.defined() && t.scalar_type() == at::kDouble && t.device().is_privateuseone();
}

bool isScalarTypeArg(const c10::Argument& arg) {
  const auto& type = arg.real_type();
  if (type->kind() == c10::TypeKind::ScalarTypeType) return true;
  if (auto opt = type->castRaw<c10::OptionalType>()) {
    return opt->getElementType()->kind() == c10::TypeKind::ScalarTypeType;
  }
  return false;
}

// Does this call compute on float64? (a float64 neuron tensor, or a dtype=float64 argument)
bool computesOnDouble(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      if (isDoubleOnNeuron(v.toTensor())) return true;
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) {
        if (isDoubleOnNeuron(t)) return true;
      }
    } else if (v.isInt() && v.toInt() == static_cast<int64_t>(at::kDouble) && isScalarTypeArg(schema.arguments()[i])) {
      return true;
    }
  }
  return false;
}

// float64 next to another floating dtype (beyond 0-dim scalars): some kernels promote, others (BLAS) refuse;
// such calls run unconverted so the answer or the error is PyTorch's own.
bool mixesFloatingDtypes(c10::ArrayRef<c10::IValue> args) {
  auto other = [](const at::Tensor& t) {
    return t.defined() && t.dim() > 0 && t.scalar_type() != at::kDouble && at::isFloatingType(t.scalar_type());
  };
  for (const c10::IValue& v : args) {
    if (v.isTensor() && other(v.toTensor())) return true;
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) {
        if (other(t)) return true;
      }
    }
  }
  return false;
}

bool returnsView(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    if (ret.alias_info() != nullptr && !ret.alias_info()->isWrite()) return true;
  }
  return false;
}

// Neuron tensors become meta tensors; host tensors (0-dim scalars, wrapped numbers) stay as they are, as
// meta kernels accept CPU scalars next to meta tensors.
at::Tensor metaLike(const at::Tensor& t) {
  if (!t.defined() || !t.device().is_privateuseone()) return t;
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
}

c10::IValue metaValue(const c10::IValue& v, bool is_generator) {
  if (v.isTensor()) return metaLike(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(metaLike(t));
    return out;
  }
  if (v.isList() && !v.toListRef().empty() && (v.toListRef()[0].isTensor() || v.toListRef()[0].isNone())) {
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& e : v.toListRef()) {
      out.push_back(e.isTensor() ? std::optional<at::Tensor>(metaLike(e.toTensor())) : std::nullopt);
    }
    return out;
  }
  if (v.isDevice() && v.toDevice().is_privateuseone()) return c10::IValue(c10::Device(c10::kMeta));
  if (is_generator) return c10::IValue();
  return v;
}

enum class MetaOutcome { Inferred, NoMetaKernel, Rejected };

// Runs the op's Meta kernel on the original arguments: the dtype of every returned tensor, in stack order.
MetaOutcome inferResultDtypes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                              std::vector<std::vector<at::ScalarType>>* dtypes) {
  const auto& schema = op.schema();
  torch::jit::Stack meta;
  meta.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& type = schema.arguments()[i].type();
    bool gen = false;
    if (auto opt = type->castRaw<c10::OptionalType>()) gen = opt->getElementType()->kind() == c10::TypeKind::GeneratorType;
    meta.push_back(metaValue(args[i], gen || type->kind() == c10::TypeKind::GeneratorType));
  }
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (const c10::NotImplementedError&) {
    return MetaOutcome::NoMetaKernel;
  } catch (...) {
    return MetaOutcome::Rejected;
  }
  for (const c10::IValue& v : meta) {
    std::vector<at::ScalarType> d;
    if (v.isTensor()) {
      d.push_back(v.toTensor().defined() ? v.toTensor().scalar_type() : at::ScalarType::Undefined);
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) d.push_back(t.defined() ? t.scalar_type() : at::ScalarType::Undefined);
    }
    dtypes->push_back(std::move(d));
  }
  return MetaOutcome::Inferred;
}

at::ScalarType widened(at::ScalarType computed) {
  if (computed == at::kFloat) return at::kDouble;
  if (computed == at::kComplexFloat) return at::kComplexDouble;
  return computed;
}

at::Tensor toFloat(const at::Tensor& t) {
  return t.to(t.scalar_type() == at::kComplexDouble ? at::kComplexFloat : at::kFloat);
}

// A float64 (or complex128) tensor argument to convert: on neuron, or a 0-dim host scalar next to them. Never
// a wrapped Python number (x * 1e-9): it does not decide the result dtype, the converted tensors do, and
// PyTorch can box a wrapped number back into Python (the lowered executor's arguments) only as double,
// int64, bool or complex128; a float32 one fails in toPyObject.
bool convertible(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == at::kDouble || t.scalar_type() == at::kComplexDouble) &&
      !t.unsafeGetTensorImpl()->is_wrapped_number() && (t.device().is_privateuseone() || t.dim() == 0);
}

struct WriteBack {
  at::Tensor original;  // the caller's float64 tensor
  at::Tensor computed;  // the float32 stand-in the kernel wrote
};

at::Tensor restoreResult(const at::Tensor& result, at::ScalarType expected, const std::vector<WriteBack>& writes) {
  if (!result.defined()) return result;
  for (const auto& w : writes) {
    if (w.computed.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) return w.original;
  }
  if (expected != at::ScalarType::Undefined && expected != result.scalar_type()) return result.to(expected);
  return result;
}
} // namespace

void configureFp64(Fp64Mode mode, std::vector<std::string> exempt_ops) {
  auto exempt = std::make_shared<const std::unordered_set<std::string>>(exempt_ops.begin(), exempt_ops.end());
  {
    std::lock_guard<std::mutex> lock(g_exempt_mutex);
    g_exempt = std::move(exempt);
  }
  g_emulate.store(mode == Fp64Mode::Emulate);
}

Fp64Mode fp64Mode() { return g_emulate.load(std::memory_order_relaxed) ? Fp64Mode::Emulate : Fp64Mode::Native; }

void setFp64CallerIsInternal(Fp64CallerIsInternalFn fn) { g_internal_caller.store(fn, std::memory_order_release); }

bool emulateFp64(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                 const std::function<void(torch::jit::Stack*)>& run) {
  if (t_emulating) return false;
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  auto args = torch::jit::last(*stack, nargs);
  if (C10_LIKELY(!computesOnDouble(schema, args))) return false;
  if (fp64Mode() == Fp64Mode::Native) return false;
  const auto& name = op.operator_name();
  const auto exempt = exemptOps();
  if (exempt->count(name.name) > 0 || exempt->count(name.name + "." + name.overload_name) > 0 ||
      returnsView(schema) || mixesFloatingDtypes(args)) {
    return false;
  }

  std::vector<std::vector<at::ScalarType>> expected;
  const MetaOutcome outcome = inferResultDtypes(op, args, &expected);
  if (outcome == MetaOutcome::Rejected) return false;  // let the op raise its own error, unconverted

  // Not for PyTorch's own conversions (print() formats through float64): the user has no float64 there.
  if (!g_warned.load(std::memory_order_relaxed)) {
    auto internal = g_internal_caller.load(std::memory_order_acquire);
    if ((internal == nullptr || !internal()) && !g_warned.exchange(true)) {
      TORCH_WARN("neuron: ", name.name, (name.overload_name.empty() ? "" : "."), name.overload_name,
                 " computes on float64 tensors: NeuronCores have no float64 arithmetic, so float64 ops run in "
                 "float32 and their results are stored as float64 (float32 precision). Set TORCHNEURON_FP64=native "
                 "to compute in float64 on the simulator (a Trn host cannot), or use float32. Warned once.");
    }
  }

  t_emulating = true;
  struct Reset {
    ~Reset() { t_emulating = false; }
  } reset;

  const size_t base = stack->size() - nargs;
  std::vector<WriteBack> writes;
  // One tensor passed twice (self and out=self) gets one float32 stand-in, so the kernel still sees the
  // aliasing (in-place shape checks).
  std::vector<std::pair<c10::TensorImpl*, at::Tensor>> converted;
  auto convert = [&](const at::Tensor& t) {
    for (const auto& c : converted) {
      if (c.first == t.unsafeGetTensorImpl()) return c.second;
    }
    at::Tensor f = toFloat(t);
    converted.emplace_back(t.unsafeGetTensorImpl(), f);
    return f;
  };
  auto remember = [&](const at::Tensor& original, const at::Tensor& f) {
    for (const auto& w : writes) {
      if (w.original.unsafeGetTensorImpl() == original.unsafeGetTensorImpl()) return;
    }
    writes.push_back({original, f});
  };
  for (size_t i = 0; i < nargs; ++i) {
    c10::IValue& v = (*stack)[base + i];
    const auto* alias = schema.arguments()[i].alias_info();
    const bool written = alias != nullptr && alias->isWrite();
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!convertible(t)) continue;
      at::Tensor f = convert(t);
      if (written) remember(t, f);
      v = f;
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) {
        if (!convertible(t)) {
          list.push_back(t);
          continue;
        }
        at::Tensor f = convert(t);
        if (written) remember(t, f);
        list.push_back(f);
      }
      v = std::move(list);
    } else if (v.isInt() && v.toInt() == static_cast<int64_t>(at::kDouble) && isScalarTypeArg(schema.arguments()[i])) {
      v = c10::IValue(static_cast<int64_t>(at::kFloat));
    }
  }

  run(stack);

  for (const auto& w : writes) {
    if (!w.original.sizes().equals(w.computed.sizes())) w.original.resize_(w.computed.sizes());
    w.original.copy_(w.computed);
  }
  const size_t nrets = schema.returns().size();
  const size_t first = stack->size() - nrets;
  for (size_t r = 0; r < nrets; ++r) {
    c10::IValue& v = (*stack)[first + r];
    const std::vector<at::ScalarType>* want = outcome == MetaOutcome::Inferred && r < expected.size() ? &expected[r] : nullptr;
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      at::ScalarType dtype = want != nullptr && !want->empty() ? (*want)[0]
                                                                : (t.defined() ? widened(t.scalar_type()) : at::ScalarType::Undefined);
      v = restoreResult(t, dtype, writes);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      size_t k = 0;
      for (const at::Tensor& t : v.toTensorList()) {
        at::ScalarType dtype = want != nullptr && k < want->size() ? (*want)[k]
                                                                    : (t.defined() ? widened(t.scalar_type()) : at::ScalarType::Undefined);
        out.push_back(restoreResult(t, dtype, writes));
        ++k;
      }
      v = std::move(out);
    }
  }
  return true;
}

} // namespace torchneuron
