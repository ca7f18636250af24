#include "runtime/nrt/NrtStatus.h"

#include <c10/util/Exception.h>

namespace torchneuron {

const char* nrtStatusName(int status) {
  switch (status) {
    case NRT_SUCCESS: return "NRT_SUCCESS";
    case NRT_FAILURE: return "NRT_FAILURE";
    case NRT_INVALID: return "NRT_INVALID";
    case NRT_INVALID_HANDLE: return "NRT_INVALID_HANDLE";
    case NRT_RESOURCE: return "NRT_RESOURCE";
    case NRT_TIMEOUT: return "NRT_TIMEOUT";
    case NRT_HW_ERROR: return "NRT_HW_ERROR";
    case NRT_QUEUE_FULL: return "NRT_QUEUE_FULL";
    case NRT_LOAD_NOT_ENOUGH_NC: return "NRT_LOAD_NOT_ENOUGH_NC";
    case NRT_UNSUPPORTED_NEFF_VERSION: return "NRT_UNSUPPORTED_NEFF_VERSION";
    case NRT_UNINITIALIZED: return "NRT_UNINITIALIZED";
    case NRT_CLOSED: return "NRT_CLOSED";
    case NRT_EXEC_BAD_INPUT: return "NRT_EXEC_BAD_INPUT";
    case NRT_EXEC_COMPLETED_WITH_NUM_ERR: return "NRT_EXEC_COMPLETED_WITH_NUM_ERR";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "NRT_EXEC_COMPLETED_WITH_ERR";
    case NRT_EXEC_NC_BUSY: return "NRT_EXEC_NC_BUSY";
    case NRT_COLL_PENDING: return "NRT_COLL_PENDING";
    default: return "an unknown NRT_STATUS";
  }
}

namespace {
// The fix a user can apply, per status (libnrt logs its own details to the console / syslog).
const char* advice(int status) {
  switch (status) {
    case NRT_RESOURCE:
      return "the NeuronCore ran out of device memory. Free tensors you no longer need, call "
             "torch.neuron.empty_cache(), or reduce the batch size";
    case NRT_TIMEOUT:
      return "the execution did not finish in time. Raise NEURON_RT_EXEC_TIMEOUT (seconds) if the program is "
             "expected to run that long";
    case NRT_HW_ERROR:
    case NRT_EXEC_COMPLETED_WITH_ERR:
      return "the device reported a hardware error. Check `neuron-ls` / the system log; the device may need a "
             "reset (restart the process; reboot the instance if it persists)";
    case NRT_QUEUE_FULL:
      return "too many executions are queued on this NeuronCore. Synchronise (torch.neuron.synchronize()) or "
             "lower NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS";
    case NRT_LOAD_NOT_ENOUGH_NC:
      return "not enough free NeuronCores to load the program. Give this process more cores with "
             "NEURON_RT_VISIBLE_CORES or NEURON_RT_NUM_CORES, or stop the processes holding them";
    case NRT_UNSUPPORTED_NEFF_VERSION:
      return "the NEFF was built by a neuronx-cc this libnrt does not support. Install matching versions of "
             "neuronx-cc and aws-neuronx-runtime-lib, then clear the compile cache (TORCHNEURON_CACHE_DIR)";
    case NRT_UNINITIALIZED:
    case NRT_CLOSED:
      return "libnrt was not initialised (or was already closed) for this call; this is a torchneuron bug, "
             "please report it";
    case NRT_EXEC_BAD_INPUT:
    case NRT_INVALID:
    case NRT_INVALID_HANDLE:
      return "libnrt rejected the request (tensor sizes or handles that do not match the program). Run with "
             "NEURON_RT_LOG_LEVEL=INFO for libnrt's reason; if the program came from torchneuron, please report it";
    case NRT_EXEC_COMPLETED_WITH_NUM_ERR:
      return "the program ran but produced numerical errors (NaN) on the device; its outputs hold those "
             "values. Check the inputs and the learning rate / loss scaling (torch.amp.GradScaler), or run the "
             "same step on the CPU to find the first non-finite value";
    case NRT_EXEC_NC_BUSY:
      return "the NeuronCore is in use by another process or model. Give each process its own cores with "
             "NEURON_RT_VISIBLE_CORES (e.g. NEURON_RT_VISIBLE_CORES=0-1 for one process, 2-3 for the next), or "
             "stop the process holding them";
    case NRT_COLL_PENDING:
      return "a collective operation is still pending on this NeuronCore; synchronise before this call";
    default:
      return "see libnrt's log (NEURON_RT_LOG_LEVEL=INFO) for details";
  }
}
} // namespace

void checkNrt(int status, const char* call, const std::string& where) {
  if (C10_LIKELY(status == NRT_SUCCESS)) return;
  const std::string message = c10::str("neuron: ", call, " returned ", nrtStatusName(status), " (", status,
                                       ") on ", where, ": ", advice(status), ".");
  if (status == NRT_RESOURCE) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, message);
  }
  TORCH_CHECK(false, message);
}

} // namespace torchneuron
