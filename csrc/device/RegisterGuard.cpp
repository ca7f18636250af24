#include "device/GuardImpl.h"

C10_REGISTER_GUARD_IMPL(PrivateUse1, torchneuron::GuardImpl);
