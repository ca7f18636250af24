// NEFF programs on the nrt runtime: nrt_load once per device, nrt_execute on tensor sets whose tensors are
// slices (nrt_tensor_allocate_slice) of the caching allocator's segments at the tensors' offsets.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "runtime/nrt/NrtRuntime.h"
#include "runtime/nrt/NrtStatus.h"

namespace torchneuron {

namespace {
std::string at(int device) { return "neuron:" + std::to_string(device); }

// The NEFF names its tensors input0.. / output0..; order them by that number (libnrt lists them in any order).
long indexIn(const std::string& name) {
  size_t end = name.size(), begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  return begin == end ? -1 : std::stol(name.substr(begin));
}

void sortByIndex(std::vector<NrtTensorSlot>& slots) {
  std::stable_sort(slots.begin(), slots.end(),
                   [](const NrtTensorSlot& a, const NrtTensorSlot& b) { return indexIn(a.name) < indexIn(b.name); });
}

// Everything one execution allocates in libnrt, released on every path.
struct ExecutionSets {
  const NrtLibrary& lib;
  nrt_tensor_set_t* inputs = nullptr;
  nrt_tensor_set_t* outputs = nullptr;
  std::vector<nrt_tensor_t*> slices;
  ~ExecutionSets() {
    if (inputs) lib.nrt_destroy_tensor_set(&inputs);
    if (outputs) lib.nrt_destroy_tensor_set(&outputs);
    for (nrt_tensor_t* s : slices) lib.nrt_tensor_free(&s);
  }
};
} // namespace

int64_t NrtRuntime::loadModel(int device, const void* neff, size_t size) {
  checkDevice(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    checkOpen("loading a NEFF");
  }
  const std::string where = c10::str(at(device), ", loading a ", size, "-byte NEFF");
  nrt_model_t* model = nullptr;
  checkNrt(lib_->nrt_load(neff, size, device, -1, &model), "nrt_load", where);
  nrt_tensor_info_array_t* info = nullptr;
  int status = lib_->nrt_get_model_tensor_info(model, &info);
  if (status != NRT_SUCCESS) {
    lib_->nrt_unload(model);
    checkNrt(status, "nrt_get_model_tensor_info", where);
  }
  NrtModelIo io{device, {}, {}};
  for (uint64_t i = 0; i < info->tensor_count; ++i) {
    const nrt_tensor_info_t& t = info->tensor_array[i];
    NrtTensorSlot slot{std::string(t.name, strnlen(t.name, NRT_TENSOR_NAME_MAX)), t.size};
    (t.usage == NRT_TENSOR_USAGE_INPUT ? io.inputs : io.outputs).push_back(std::move(slot));
  }
  lib_->nrt_free_model_tensor_info(info);
  sortByIndex(io.inputs);
  sortByIndex(io.outputs);
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = next_model_++;
  models_.emplace(id, Model{model, std::move(io)});
  return id;
}

NrtModelIo NrtRuntime::modelIo(int64_t model) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(model);
  TORCH_CHECK(it != models_.end(), "neuron: no loaded NEFF has handle ", model);
  return it->second.io;
}

void NrtRuntime::execute(int64_t model_id, const std::vector<NrtSpan>& inputs, const std::vector<NrtSpan>& outputs,
                         Queue& q, const std::string& what) {
  nrt_model_t* model = nullptr;
  NrtModelIo io;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    checkOpen("executing a NEFF");
    auto it = models_.find(model_id);
    TORCH_CHECK(it != models_.end(), "neuron: no loaded NEFF has handle ", model_id, " (", what, ")");
    model = it->second.model;
    io = it->second.io;
  }
  const std::string where = c10::str(at(io.device), ", executing ", what);
  TORCH_CHECK(inputs.size() == io.inputs.size() && outputs.size() == io.outputs.size(), "neuron: ", where,
              ": the NEFF takes ", io.inputs.size(), " inputs and ", io.outputs.size(), " outputs, got ",
              inputs.size(), " and ", outputs.size());
  struct Bound {
    Located located;
    size_t nbytes;
    const std::string* name;
  };
  std::vector<Bound> bound;
  auto bind = [&](const std::vector<NrtSpan>& spans, const std::vector<NrtTensorSlot>& slots, const char* kind) {
    for (size_t i = 0; i < spans.size(); ++i) {
      TORCH_CHECK(spans[i].nbytes == slots[i].nbytes, "neuron: ", where, ": ", kind, " ", i, " ('", slots[i].name,
                  "') has ", spans[i].nbytes, " bytes; the NEFF expects ", slots[i].nbytes);
      Located l = locate(spans[i].data, spans[i].nbytes, kind);
      TORCH_CHECK(l.device == io.device, "neuron: ", where, ": ", kind, " ", i, " is on ", at(l.device),
                  ", but the NEFF is loaded on ", at(io.device), "; move the tensor with .to()");
      bound.push_back({l, spans[i].nbytes, &slots[i].name});
    }
  };
  bind(inputs, io.inputs, "input");
  bind(outputs, io.outputs, "output");
  q.submit(
      [&] {
        ExecutionSets sets{*lib_};
        checkNrt(lib_->nrt_allocate_tensor_set(&sets.inputs), "nrt_allocate_tensor_set", where);
        checkNrt(lib_->nrt_allocate_tensor_set(&sets.outputs), "nrt_allocate_tensor_set", where);
        for (size_t i = 0; i < bound.size(); ++i) {
          const Bound& b = bound[i];
          nrt_tensor_t* slice = nullptr;
          checkNrt(lib_->nrt_tensor_allocate_slice(b.located.tensor, b.located.offset, b.nbytes, b.name->c_str(),
                                                   &slice),
                   "nrt_tensor_allocate_slice", where);
          sets.slices.push_back(slice);
          nrt_tensor_set_t* set = i < inputs.size() ? sets.inputs : sets.outputs;
          checkNrt(lib_->nrt_add_tensor_to_tensor_set(set, b.name->c_str(), slice), "nrt_add_tensor_to_tensor_set",
                   where);
        }
        checkNrt(lib_->nrt_execute(model, sets.inputs, sets.outputs), "nrt_execute", where);
      },
      /*async=*/false);
}

void NrtRuntime::unloadModel(int64_t model_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(model_id);
  if (it == models_.end()) return;
  nrt_model_t* model = it->second.model;
  const int device = it->second.io.device;
  models_.erase(it);
  if (!closed_) checkNrt(lib_->nrt_unload(model), "nrt_unload", at(device));
}

} // namespace torchneuron
