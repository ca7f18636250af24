#pragma once
// The calling thread's current device and, per device, its current stream index (torch.neuron.set_device,
// set_stream). They live below the allocator, which allocates on them (c10::Allocator::allocate is given
// neither); the stream layer (device/Streams.h) wraps them as c10::Device indices and c10::Streams.
namespace torchneuron {

int currentDeviceIndex();
void setCurrentDeviceIndex(int device);  // unchecked: device/Streams.h's setCurrentDevice checks first
// 0 (the default stream) until set on this thread.
int currentStreamIndex(int device);
void setCurrentStreamIndex(int device, int stream_index);
// Throws unless 0 <= device < the runtime's device count, naming what sets that count.
void checkDeviceIndex(int device);

} // namespace torchneuron
