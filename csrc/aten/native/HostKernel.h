#pragma once
// The unboxed host path: HostKernel<at::_ops::X>::call is a neuron kernel for op X that runs X's CPU kernel
// on host aliases, exactly as the boxed kernel (BoxedHostKernel.h) does, but without boxing. A boxed kernel receives its
// arguments as IValue copies, and in PyTorch 2.13 the first C++ copy of a tensor that has a Python object
// increfs that object under the GIL (which the Python binding released): for a 16x16 add that was a GIL
// round trip per tensor argument. Here the caller's tensors are only ever referred to.
//
// Anything the fast path does not decide by itself (a policy refusal, the lowered-eager executor, float64
// emulation) goes through the boxed kernel, so both paths give the same results and errors.
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/IListRef.h>

#include <array>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aten/native/BoxedHostKernel.h"
#include "aten/native/HostCall.h"

namespace torchneuron::hostkernel {

inline bool isNeuron(const at::Tensor& t) { return t.defined() && t.device().is_privateuseone(); }

// ---- arguments: device check, float64 detection, and the host form passed to the CPU kernel ----
template <class T>
struct Host {  // anything that is not a tensor passes through
  using Bare = std::decay_t<T>;
  static_assert(!std::is_same_v<Bare, std::optional<at::Generator>> && !std::is_same_v<Bare, at::Generator> &&
                    !std::is_same_v<Bare, std::optional<at::Device>> && !std::is_same_v<Bare, at::Device> &&
                    !std::is_same_v<Bare, c10::List<std::optional<at::Tensor>>>,
                "generator and device arguments need the boxed kernel's handling; index lists are passed by "
                "const reference (see below)");
  std::remove_reference_t<T>* value;
  Host(HostCall&, T& v, bool) : value(&v) {}
  T get() const { return static_cast<T>(*value); }
  static void see(DeviceCheck&, const T&, const std::string&) {}
  static bool onDouble(const T& v) {
    if constexpr (std::is_same_v<Bare, at::ScalarType>) return v == at::kDouble;
    else if constexpr (std::is_same_v<Bare, std::optional<at::ScalarType>>) return v == at::kDouble;
    else return false;
  }
};

// A tensor's alias stays in the HostCall's pair list (no copy of it: each copy of a tensor is two atomic
// reference-count updates); get() is called once every argument has its alias, so the index is final.
template <>
struct Host<const at::Tensor&> {
  HostCall* call = nullptr;  // null: not a neuron tensor, the original is passed
  size_t index = 0;
  const at::Tensor* original;
  Host(HostCall& c, const at::Tensor& t, bool written) : original(&t) {
    if (isNeuron(t)) {
      call = &c;
      index = c.toHostIndex(t, written);
    }
  }
  const at::Tensor& get() const { return call != nullptr ? call->aliasAt(index) : *original; }
  static void see(DeviceCheck& c, const at::Tensor& t, const std::string& n) { c.see(t, n, false); }
  static bool onDouble(const at::Tensor& t) { return isNeuron(t) && t.scalar_type() == at::kDouble; }
};

template <>
struct Host<at::Tensor&> {
  HostCall* call = nullptr;
  size_t index = 0;
  at::Tensor* original;
  Host(HostCall& c, at::Tensor& t, bool) : original(&t) {
    if (isNeuron(t)) {
      call = &c;
      index = c.toHostIndex(t, /*written=*/true);
    }
  }
  at::Tensor& get() { return call != nullptr ? call->aliasAt(index) : *original; }
  static void see(DeviceCheck& c, const at::Tensor& t, const std::string& n) { c.see(t, n, false); }
  static bool onDouble(const at::Tensor& t) { return Host<const at::Tensor&>::onDouble(t); }
};

template <>
struct Host<const std::optional<at::Tensor>&> {
  std::optional<at::Tensor> alias;
  const std::optional<at::Tensor>* original;
  Host(HostCall& call, const std::optional<at::Tensor>& t, bool written) : original(&t) {
    if (t.has_value() && isNeuron(*t)) alias = call.toHost(*t, written);
  }
  const std::optional<at::Tensor>& get() const { return alias.has_value() ? alias : *original; }
  static void see(DeviceCheck& c, const std::optional<at::Tensor>& t, const std::string& n) {
    if (t.has_value()) c.see(*t, n, false);
  }
  static bool onDouble(const std::optional<at::Tensor>& t) {
    return t.has_value() && Host<const at::Tensor&>::onDouble(*t);
  }
};

// An index list (Tensor?[]), element by element as the boxed kernel converts it (HostCall::appendIndex).
// The list is read through an IValue so that its elements are referred to, never copied, and the
// host list is the thread's scratch list (HostThreadState), emptied after the call (a new c10::List per x[idx]
// was a third of the op's overhead); a nested call while it is in use gets a list of its own.
template <>
struct Host<const c10::List<std::optional<at::Tensor>>&> {
  using List = c10::List<std::optional<at::Tensor>>;

  // The list's elements, read in place. Boxing the list into an IValue (what toListRef needs) copies its
  // reference-counted pointer, two atomic updates, and x[idx] read it three times. A c10::List is standard
  // layout with its ListImpl pointer as only member, so the two are pointer-interconvertible.
  static const std::vector<c10::IValue>& elements(const List& list) {
    static_assert(std::is_standard_layout_v<List> &&
                  sizeof(List) == sizeof(c10::intrusive_ptr<c10::detail::ListImpl>));
    return reinterpret_cast<const c10::intrusive_ptr<c10::detail::ListImpl>&>(list)->list;
  }

  const List* original;
  List* host = nullptr;  // the list the kernel gets instead of the original, when converted
  std::unique_ptr<List> owned;
  HostThreadState* scratch = nullptr;  // set while `host` is the thread's scratch list

  Host(HostCall& call, const List& list, bool written) : original(&list) {
    bool convert = false;
    for (const c10::IValue& e : elements(list)) {
      if (e.isTensor() && (!e.toTensor().defined() || isNeuron(e.toTensor()))) convert = true;
    }
    if (!convert) return;
    HostThreadState& thread = call.thread();
    if (!thread.index_list_busy) {
      // someone kept the last one: never reuse it
      if (thread.index_list.use_count() != 1) thread.index_list = List();
      thread.index_list_busy = true;
      scratch = &thread;
      host = &thread.index_list;
    } else {
      owned = std::make_unique<List>();
      host = owned.get();
    }
    host->reserve(list.size());
    for (const c10::IValue& e : elements(list)) call.appendIndex(*host, e, written);
  }
  Host(Host&& other) noexcept
      : original(other.original), host(other.host), owned(std::move(other.owned)), scratch(other.scratch) {
    other.host = nullptr;
    other.scratch = nullptr;
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
  Host& operator=(Host&&) = delete;
  ~Host() {
    if (scratch != nullptr) {
      host->clear();  // the aliases must not stay referenced: the alias cache reuses only unshared ones
      scratch->index_list_busy = false;
    }
  }
  const List& get() const { return host != nullptr ? *host : *original; }
  static void see(DeviceCheck& c, const List& list, const std::string& n) {
    for (const c10::IValue& e : elements(list)) {
      if (e.isTensor()) c.see(e.toTensor(), n, /*host_allowed=*/true);
    }
  }
  static bool onDouble(const List& list) {
    for (const c10::IValue& e : elements(list)) {
      if (e.isTensor() && Host<const at::Tensor&>::onDouble(e.toTensor())) return true;
    }
    return false;
  }
};

// Tensor lists become a vector of host tensors (non-neuron elements, 0-dim host scalars, are copied).
template <class List>
struct HostList {
  static std::vector<at::Tensor> convert(HostCall& call, const List& list, bool written) {
    std::vector<at::Tensor> out;
    out.reserve(list.size());
    for (const at::Tensor& t : list) out.push_back(isNeuron(t) ? call.toHost(t, written) : t);
    return out;
  }
  static void see(DeviceCheck& c, const List& list, const std::string& n) {
    for (const at::Tensor& t : list) c.see(t, n, false);
  }
  static bool onDouble(const List& list) {
    for (const at::Tensor& t : list) {
      if (Host<const at::Tensor&>::onDouble(t)) return true;
    }
    return false;
  }
};

template <>
struct Host<at::TensorList> : HostList<at::TensorList> {
  std::vector<at::Tensor> host;
  Host(HostCall& call, at::TensorList& list, bool written) : host(convert(call, list, written)) {}
  at::TensorList get() const { return host; }
};

template <>
struct Host<const at::ITensorListRef&> : HostList<at::ITensorListRef> {
  std::vector<at::Tensor> host;
  at::ITensorListRef ref;
  Host(HostCall& call, const at::ITensorListRef& list, bool written) : host(convert(call, list, written)), ref(host) {}
  Host(Host&& other) noexcept : host(std::move(other.host)), ref(host) {}
  const at::ITensorListRef& get() const { return ref; }
};

// ---- results: back to neuron tensors ----
template <class R>
struct Result;

template <>
struct Result<at::Tensor> {
  static at::Tensor convert(const HostCall& call, at::Tensor r) { return call.toDevice(std::move(r)); }
};

template <>
struct Result<at::Tensor&> {  // in-place / out=: the caller's own tensor
  static at::Tensor& convert(const HostCall& call, at::Tensor& r) {
    const at::Tensor* original = call.originalOf(r);
    return original != nullptr ? const_cast<at::Tensor&>(*original) : r;
  }
};

template <>
struct Result<std::vector<at::Tensor>> {
  static std::vector<at::Tensor> convert(const HostCall& call, std::vector<at::Tensor> r) {
    for (auto& t : r) t = call.toDevice(std::move(t));
    return r;
  }
};

template <class... Ts>
struct Result<std::tuple<Ts...>> {
  static std::tuple<Ts...> convert(const HostCall& call, std::tuple<Ts...> r) {
    return std::apply([&](auto&&... e) { return std::tuple<Ts...>(Result<Ts>::convert(call, e)...); }, r);
  }
};

// ---- the kernel ----
template <class Op, class Sig = typename Op::schema>
struct HostKernel;

template <class Op, class R, class... Args>
struct HostKernel<Op, R(Args...)> {
  static const c10::OperatorHandle& handle() {
    static const c10::OperatorHandle h = c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    return h;
  }

  static R call(c10::DispatchKeySet keys, Args... args) {
    return callImpl(keys, std::index_sequence_for<Args...>{}, args...);
  }

 private:
  template <size_t... I>
  static R callImpl(c10::DispatchKeySet keys, std::index_sequence<I...>, Args&... args) {
    static OpEntry* const entry = &opEntry(handle());
    if (!directHostPath(handle(), *entry) || (Host<Args>::onDouble(args) || ...)) {
      static const c10::BoxedKernel boxed = c10::BoxedKernel::makeFromFunction<&boxedOpKernel>();
      return c10::impl::BoxedKernelWrapper<R(Args...)>::call(boxed, handle(), keys, std::forward<Args>(args)...);
    }
    countExecution(*entry);
    static const c10::FunctionSchema& schema = handle().schema();  // argument names, for error messages
    DeviceCheck check(entry->name);
    (Host<Args>::see(check, args, schema.arguments()[I].name()), ...);
    HostCall call(*entry, check.finish());
    // The schema's write flags as constants (analysed before the first direct call, see directHostPath).
    static const std::array<bool, sizeof...(Args)> writes{static_cast<bool>(entry->writes[I])...};
    std::tuple<Host<Args>...> host{Host<Args>(call, args, writes[I])...};
    auto kernel = [&]() -> R {
      static constexpr c10::DispatchKeySet kCpu(c10::DispatchKey::CPU);  // built once, not per call
      return Op::redispatch(kCpu, std::get<I>(host).get()...);
    };
    if constexpr (std::is_void_v<R>) {
      call.run(kernel);
    } else {
      return Result<R>::convert(call, call.run(kernel));
    }
  }
};

} // namespace torchneuron::hostkernel
