#include "allocator/DeviceCache.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>

#include "allocator/AllocationObserver.h"
#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
std::atomic<AllocationObserver> g_observer{nullptr};

// Every allocation and free: to PyTorch's profiler (profile_memory=True, as CUDA's allocator does) and to the
// observer, if one is installed.
inline void reportDeviceMemory(void* ptr, int64_t delta, size_t total_allocated, size_t total_reserved,
                               int device) {
  c10::reportMemoryUsageToProfiler(ptr, delta, total_allocated, total_reserved,
                                   c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
  const AllocationObserver observer = g_observer.load(std::memory_order_relaxed);
  if (C10_UNLIKELY(observer != nullptr)) observer(delta);
}

// The same size classes as PyTorch's CUDA caching allocator, so users' tuning intuition carries over.
constexpr size_t kMinBlockSize = 512;        // every block is a multiple of this
constexpr size_t kSmallSize = 1 << 20;       // requests up to 1 MiB come from the small pool
constexpr size_t kSmallBuffer = 2 << 20;     // small-pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20 << 20;    // large requests under 10 MiB share 20 MiB segments
constexpr size_t kMinLargeAlloc = 10 << 20;
constexpr size_t kRoundLarge = 2 << 20;      // bigger requests get their own segment, rounded to 2 MiB
constexpr size_t kMaxParkedSize = 64 << 10;  // parked blocks stay small: they keep their neighbours apart

// Rounds up to a multiple, saturating: a request near 2**64 bytes stays huge (and is refused) instead of
// wrapping to a small block.
size_t roundUp(size_t n, size_t multiple) {
  return n > SIZE_MAX - (multiple - 1) ? SIZE_MAX : multiple * ((n + multiple - 1) / multiple);
}

size_t roundSize(size_t n) { return n < kMinBlockSize ? kMinBlockSize : roundUp(n, kMinBlockSize); }

size_t segmentSize(size_t n) {
  if (n <= kSmallSize) return kSmallBuffer;
  if (n < kMinLargeAlloc) return kLargeBuffer;
  return roundUp(n, kRoundLarge);
}

// Unsigned: requests past 2**63 bytes (torch.empty(2**63 - 1)) are sizes too, not negative numbers.
std::string formatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  char buf[64];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    return buf;
  }
  double b = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (b >= 1024 && unit + 1 < std::size(kUnits)) {
    b /= 1024;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.2f %s", b, kUnits[unit]);
  return buf;
}

std::string formatBytes(int64_t bytes) { return formatBytes(static_cast<uint64_t>(std::max<int64_t>(bytes, 0))); }

// The host memory the simulator's device memory comes from: free RAM, and the address-space limit
// (RLIMIT_AS) when one is set.
std::string describeHostMemory() {
  std::string out;
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    out = formatBytes(static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)) + " of host RAM is free";
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out += (out.empty() ? "" : ", ") + std::string("the process's address space is limited to ") +
        formatBytes(static_cast<uint64_t>(limit.rlim_cur)) + " (RLIMIT_AS)";
  }
  return out.empty() ? "the host's free memory is unknown" : out;
}
} // namespace

DeviceCache::DeviceCache(int device) : device_(device) {}

DeviceCache::~DeviceCache() = default;  // leaked at exit with the process, like CUDA's caches

// Called ~14 times per allocate/free pair, i.e. per small op: forced inline (it was the hottest allocator symbol).
C10_ALWAYS_INLINE void DeviceCache::update(c10::CachingAllocator::StatArray& stat, const BlockPool& pool,
                                           int64_t delta) {
  // Every change counts towards "all" and towards the block's own pool (torch.cuda's StatType layout).
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto kPool = static_cast<size_t>(pool.is_small ? c10::CachingAllocator::StatType::SMALL_POOL
                                                       : c10::CachingAllocator::StatType::LARGE_POOL);
  if (delta >= 0) {
    stat[kAll].increase(static_cast<size_t>(delta));
    stat[kPool].increase(static_cast<size_t>(delta));
  } else {
    stat[kAll].decrease(static_cast<size_t>(-delta));
    stat[kPool].decrease(static_cast<size_t>(-delta));
  }
}

// A free block in a split segment counts as an inactive split (torch.cuda's statistic); sign: +1 entering that
// state, -1 leaving it (its size as it is now).
C10_ALWAYS_INLINE void DeviceCache::countInactiveSplit(const Block* block, int sign) {
  if (!block->isSplit()) return;
  update(stats_.inactive_split, *block->pool, sign);
  update(stats_.inactive_split_bytes, *block->pool, sign * static_cast<int64_t>(block->size));
}

// Freed: no longer active.
C10_ALWAYS_INLINE void DeviceCache::deactivate(const Block* block) {
  update(stats_.active, *block->pool, -1);
  update(stats_.active_bytes, *block->pool, -static_cast<int64_t>(block->size));
}

namespace {
bool worthSplitting(const BlockPool& pool, size_t remaining) {
  return pool.is_small ? remaining >= kMinBlockSize : remaining > kSmallSize;
}
} // namespace

Block* DeviceCache::malloc(int stream, size_t nbytes) {
  std::lock_guard<SpinLock> lock(mutex_);
  if (!pending_.empty()) {
    processEvents();
  }
  size_t size = roundSize(nbytes);
  BlockPool& pool = size <= kSmallSize ? small_ : large_;
  Block* block = size <= kMaxParkedSize ? unpark(stream, size) : nullptr;  // an exact fit: nothing to split
  if (block == nullptr) block = takeCached(pool, stream, size);
  if (block == nullptr) {
    size_t alloc_size = segmentSize(size);
    if (num_parked_ > 0 && pool.is_small) {
      mergeParked();  // merged, the parked blocks may fit: no new segment while they could serve
      block = takeCached(pool, stream, size);
    }
    if (block == nullptr) block = allocateSegment(pool, stream, alloc_size);
    if (block == nullptr) {
      // Device full: wait for pending frees, hand the cache back to the runtime, and try once more.
      stats_.num_alloc_retries += 1;
      releaseCachedBlocks();
      block = allocateSegment(pool, stream, alloc_size);
    }
    if (block == nullptr) {
      stats_.num_ooms += 1;
      raiseOutOfMemory(nbytes, alloc_size);
    }
  }

  // Split off the tail when the leftover is worth keeping as a free block.
  size_t remaining = block->size - size;
  if (worthSplitting(pool, remaining)) {
    Block* rest = newBlock(stream, remaining, &pool, static_cast<char*>(block->ptr) + size);
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    insertFree(pool, rest);
    countInactiveSplit(rest, 1);
  }

  block->allocated = true;
  block->requested = nbytes;
  update(stats_.allocation, pool, 1);
  update(stats_.allocated_bytes, pool, static_cast<int64_t>(block->size));
  update(stats_.active, pool, 1);
  update(stats_.active_bytes, pool, static_cast<int64_t>(block->size));
  update(stats_.requested_bytes, pool, static_cast<int64_t>(nbytes));
  live_[block->ptr] = block;
  reportDeviceMemory(block->ptr, static_cast<int64_t>(block->size), stats_.allocated_bytes[0].current,
                     stats_.reserved_bytes[0].current, device_);
  return block;
}

// The best-fitting free block of the pool on `stream` (at least `size` bytes), out of the tree, or nullptr.
Block* DeviceCache::takeCached(BlockPool& pool, int stream, size_t size) {
  auto it = pool.blocks.lower_bound(orderKey(stream, size, nullptr));
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  // Split in place when it can (the free block stays in the tree as the rest; the block is then exactly `size`).
  Block* block = nullptr;
  if (!worthSplitting(pool, (*it)->size - size) || (block = splitInPlace(pool, it, size)) == nullptr) {
    block = *it;
    takeFreeBlock(pool, it);
  }
  return block;
}

bool DeviceCache::freeIfLive(void* ptr) {
  std::lock_guard<SpinLock> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  Block* block = it->second;
  live_.erase(it);
  free(block);
  return true;
}

bool DeviceCache::recordStreamIfLive(void* ptr, int stream) {
  std::lock_guard<SpinLock> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  Block* block = it->second;
  if (stream == block->stream) return true;  // its own stream orders it already
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) == block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
  return true;
}

void DeviceCache::takeFreeBlock(BlockPool& pool, std::set<Block*, BlockOrder>::iterator it) {
  Block* block = *it;
  keepNode(pool.blocks.extract(it));
  countInactiveSplit(block, -1);
}

// The free block at `it` gives its first `size` bytes to a new block (returned, not in the tree) and stays in the
// tree as the rest, when the rest's key still sorts after the block before it; else nullptr and nothing changes.
// Same blocks, links and statistics updates as taking the block out and splitting off a new tail.
Block* DeviceCache::splitInPlace(BlockPool& pool, std::set<Block*, BlockOrder>::iterator it, size_t size) {
  Block* rest = *it;
  const size_t remaining = rest->size - size;
  char* rest_ptr = static_cast<char*>(rest->ptr) + size;
  if (it != pool.blocks.begin() && !(orderKey(*std::prev(it)) < orderKey(rest->stream, remaining, rest_ptr))) {
    return nullptr;
  }
  countInactiveSplit(rest, -1);
  Block* block = newBlock(rest->stream, size, &pool, rest->ptr);
  block->prev = rest->prev;
  if (block->prev) block->prev->next = block;
  block->next = rest;
  rest->prev = block;
  rest->ptr = rest_ptr;
  rest->size = remaining;
  countInactiveSplit(rest, 1);
  return block;
}

Block* DeviceCache::allocateSegment(BlockPool& pool, int stream, size_t size) {
  Runtime& rt = runtime();
  int64_t limit = static_cast<int64_t>(memory_fraction_ * static_cast<double>(rt.capacity(device_)));
  auto reserved = stats_.reserved_bytes[0].current;
  if (size > static_cast<uint64_t>(std::max<int64_t>(limit - reserved, 0))) {  // unsigned: size may exceed 2**63
    return nullptr;
  }
  void* ptr = rt.allocate(device_, size);
  if (ptr == nullptr) {
    return nullptr;
  }
  stats_.num_device_alloc += 1;
  update(stats_.segment, pool, 1);
  update(stats_.reserved_bytes, pool, static_cast<int64_t>(size));
  return newBlock(stream, size, &pool, ptr);
}

Block* DeviceCache::newBlock(int stream, size_t size, BlockPool* pool, void* ptr) {
  if (spare_.empty()) return new Block(device_, stream, size, pool, ptr);
  Block* block = spare_.back();
  spare_.pop_back();
  // Field by field: what Block(device_, stream, size, pool, ptr) holds, without building and moving a temporary.
  block->device = device_;
  block->stream = stream;
  block->size = size;
  block->requested = 0;
  block->pool = pool;
  block->ptr = ptr;
  block->allocated = false;
  block->parked = false;
  block->prev = nullptr;
  block->next = nullptr;
  block->event_count = 0;
  block->stream_uses.clear();
  block->pos = {};
  return block;
}

void DeviceCache::insertFree(BlockPool& pool, Block* block) {
  if (spare_node_.empty()) {
    block->pos = pool.blocks.insert(block).first;
    return;
  }
  spare_node_.value() = block;
  block->pos = pool.blocks.insert(std::move(spare_node_)).position;
}

void DeviceCache::keepNode(std::set<Block*, BlockOrder>::node_type node) {
  if (spare_node_.empty()) spare_node_ = std::move(node);
}

void DeviceCache::dropBlock(Block* block) {
  constexpr size_t kMaxSpare = 64;
  if (spare_.size() < kMaxSpare) {
    spare_.push_back(block);
  } else {
    delete block;
  }
}

void DeviceCache::free(Block* block) {  // under mutex_
  block->allocated = false;
  BlockPool& pool = *block->pool;
  update(stats_.allocation, pool, -1);
  update(stats_.allocated_bytes, pool, -static_cast<int64_t>(block->size));
  update(stats_.requested_bytes, pool, -static_cast<int64_t>(block->requested));
  reportDeviceMemory(block->ptr, -static_cast<int64_t>(block->size), stats_.allocated_bytes[0].current,
                     stats_.reserved_bytes[0].current, device_);
  if (!block->stream_uses.empty()) {
    // Other streams may still read it: free for reuse only once their work so far has completed.
    Runtime& rt = runtime();
    for (int s : block->stream_uses) {
      auto q = rt.queue(device_, s);
      pending_.push_back({block, q, q->lastSubmitted()});
      block->event_count += 1;
    }
    block->stream_uses.clear();
    return;
  }
  if (pool.is_small && block->size <= kMaxParkedSize) {
    park(block);
    return;
  }
  freeBlock(block);
}

// Same statistics as freeBlock would give the block if neither neighbour were free.
void DeviceCache::park(Block* block) {
  deactivate(block);
  countInactiveSplit(block, 1);
  block->parked = true;  // first: the oldest, merged below, may be its neighbour
  if (num_parked_ == kParked) coalesce(takeParked(0));  // the oldest joins its pool
  parked_[num_parked_++] = block;
}

// Out of parked_, no longer counted as an inactive split (as takeFreeBlock leaves a block it takes).
Block* DeviceCache::takeParked(size_t i) {
  Block* block = parked_[i];
  std::copy(parked_ + i + 1, parked_ + num_parked_, parked_ + i);
  --num_parked_;
  block->parked = false;
  countInactiveSplit(block, -1);
  return block;
}

// The newest parked block of exactly `size` bytes on `stream`.
Block* DeviceCache::unpark(int stream, size_t size) {
  for (size_t i = num_parked_; i-- > 0;) {
    if (parked_[i]->size == size && parked_[i]->stream == stream) return takeParked(i);
  }
  return nullptr;
}

void DeviceCache::mergeParked() {
  while (num_parked_ > 0) coalesce(takeParked(num_parked_ - 1));
}

void DeviceCache::freeBlock(Block* block) {
  deactivate(block);
  coalesce(block);
}

void DeviceCache::coalesce(Block* block) {
  BlockPool& pool = *block->pool;
  auto mergeable = [](Block* b) { return b != nullptr && !b->allocated && !b->parked && b->event_count == 0; };
  const bool merge_prev = mergeable(block->prev);
  const bool merge_next = mergeable(block->next);
  if (merge_prev != merge_next && mergeInPlace(block, merge_prev ? block->prev : block->next)) {
    return;
  }
  for (Block* neighbour : {block->prev, block->next}) {
    if (mergeable(neighbour)) mergeInto(block, neighbour);
  }
  insertFree(pool, block);
  countInactiveSplit(block, 1);
}

// The freed `block` joins its one free neighbour `keep`, which stays in the tree with the merged key when that
// still sorts before the block after it (the key only grows); else false and nothing changes. Same segment links
// and statistics updates as mergeInto followed by insertFree.
bool DeviceCache::mergeInPlace(Block* block, Block* keep) {
  BlockPool& pool = *block->pool;
  const size_t merged_size = block->size + keep->size;
  void* merged_ptr = keep == block->prev ? keep->ptr : block->ptr;
  auto after = std::next(keep->pos);
  if (after != pool.blocks.end() && !(orderKey(keep->stream, merged_size, merged_ptr) < orderKey(*after))) {
    return false;
  }
  countInactiveSplit(keep, -1);
  if (keep == block->prev) {
    keep->next = block->next;
    if (keep->next) keep->next->prev = keep;
  } else {
    keep->prev = block->prev;
    if (keep->prev) keep->prev->next = keep;
  }
  keep->ptr = merged_ptr;
  keep->size = merged_size;
  dropBlock(block);
  countInactiveSplit(keep, 1);
  return true;
}

void DeviceCache::mergeInto(Block* dst, Block* src) {
  BlockPool& pool = *dst->pool;
  keepNode(pool.blocks.extract(src->pos));
  countInactiveSplit(src, -1);
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  dst->size += src->size;
  dropBlock(src);
}

void DeviceCache::processEvents() {
  auto it = pending_.begin();
  while (it != pending_.end()) {
    if (it->queue->isComplete(it->seq)) {
      Block* block = it->block;
      it = pending_.erase(it);
      if (--block->event_count == 0) {
        freeBlock(block);
      }
    } else {
      ++it;
    }
  }
}

void DeviceCache::synchronizeAndFreeEvents() {
  stats_.num_sync_all_streams += 1;
  for (auto& p : pending_) {
    p.queue->waitUntil(p.seq);
  }
  processEvents();
}

void DeviceCache::releaseFreeSegments(BlockPool& pool) {
  Runtime& rt = runtime();
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    if (block->isSplit()) {
      ++it;  // part of a segment still in use
      continue;
    }
    it = pool.blocks.erase(it);
    rt.free(device_, block->ptr);
    stats_.num_device_free += 1;
    update(stats_.segment, pool, -1);
    update(stats_.reserved_bytes, pool, -static_cast<int64_t>(block->size));
    dropBlock(block);
  }
}

void DeviceCache::releaseCachedBlocks() {
  synchronizeAndFreeEvents();
  mergeParked();
  releaseFreeSegments(large_);
  releaseFreeSegments(small_);
}

void DeviceCache::emptyCache() {
  std::lock_guard<SpinLock> lock(mutex_);
  releaseCachedBlocks();
}

void DeviceCache::setMemoryFraction(double fraction) {
  TORCH_CHECK(fraction > 0.0 && fraction <= 1.0, "neuron: memory fraction must be in (0, 1], got ", fraction);
  std::lock_guard<SpinLock> lock(mutex_);
  memory_fraction_ = fraction;
}

size_t DeviceCache::reservedBytes() {
  std::lock_guard<SpinLock> lock(mutex_);
  return static_cast<size_t>(stats_.reserved_bytes[0].current);
}

void DeviceCache::raiseOutOfMemory(size_t requested, size_t alloc_size) {
  Runtime& rt = runtime();
  int64_t capacity = rt.capacity(device_);
  int64_t limit = static_cast<int64_t>(memory_fraction_ * static_cast<double>(capacity));
  int64_t allocated = stats_.allocated_bytes[0].current;
  int64_t reserved = stats_.reserved_bytes[0].current;
  std::string limit_note = memory_fraction_ < 1.0
      ? " (limited to " + formatBytes(limit) + " by set_per_process_memory_fraction)"
      : "";
  c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(std::min<size_t>(requested, INT64_MAX)),
                                   static_cast<size_t>(allocated), static_cast<size_t>(reserved),
                                   c10::Device(c10::DeviceType::PrivateUse1, device_));
  // The segment was within the limit and the device's accounting, yet the runtime refused it: on the
  // simulator, whose device memory is host memory, the host could not supply it. Saying "out of memory" with
  // 0 bytes allocated would send the user looking for tensors that do not exist.
  const bool within_limit = alloc_size <= static_cast<uint64_t>(std::max<int64_t>(limit - reserved, 0)) &&
      alloc_size <= static_cast<uint64_t>(std::max<int64_t>(capacity - rt.bytesInUse(device_), 0));
  if (within_limit && rt.hostAddressable()) {
    TORCH_CHECK_WITH(
        OutOfMemoryError, false,
        "neuron:", device_, " out of memory: host memory could not back the simulated device memory. The simulator "
        "keeps neuron:", device_, "'s memory in host memory, and the host refused the ", formatBytes(alloc_size),
        " segment for a request of ", formatBytes(static_cast<uint64_t>(requested)), " although neuron:", device_,
        " is below its limit of ", formatBytes(capacity), limit_note, " (", formatBytes(allocated),
        " is allocated by tensors, ", formatBytes(reserved), " reserved by the caching allocator); ",
        describeHostMemory(), ". Lower the request, or set TORCHNEURON_SIM_HBM_MB to a simulated HBM size "
        "the host's memory can back.");
  }
  TORCH_CHECK_WITH(
      OutOfMemoryError, false,
      "neuron:", device_, " out of memory: tried to allocate ", formatBytes(static_cast<uint64_t>(requested)),
      " (a ", formatBytes(static_cast<uint64_t>(alloc_size)), " segment). neuron:", device_, " has a limit of ",
      formatBytes(capacity), " (", rt.target().name, " HBM per logical NeuronCore)", limit_note, "; ",
      formatBytes(allocated), " is allocated by tensors and ", formatBytes(reserved),
      " is reserved by the caching allocator (", formatBytes(reserved - allocated),
      " reserved but unallocated). Free tensors you no longer need (del them), reduce the batch size, or "
      "spread the model over more neuron devices.");
}

c10::CachingDeviceAllocator::DeviceStats DeviceCache::stats() {
  std::lock_guard<SpinLock> lock(mutex_);
  return stats_;
}

namespace {
template <typename Fn>
void forEachStatArray(c10::CachingDeviceAllocator::DeviceStats& stats, Fn fn) {
  for (auto* a : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split, &stats.allocated_bytes,
                  &stats.reserved_bytes, &stats.active_bytes, &stats.inactive_split_bytes, &stats.requested_bytes}) {
    for (auto& stat : *a) fn(stat);
  }
}
} // namespace

void DeviceCache::resetAccumulatedStats() {
  std::lock_guard<SpinLock> lock(mutex_);
  forEachStatArray(stats_, [](c10::CachingAllocator::Stat& s) { s.reset_accumulated(); });
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void DeviceCache::resetPeakStats() {
  std::lock_guard<SpinLock> lock(mutex_);
  forEachStatArray(stats_, [](c10::CachingAllocator::Stat& s) { s.reset_peak(); });
}

void setAllocationObserver(AllocationObserver observer) { g_observer.store(observer, std::memory_order_relaxed); }

} // namespace torchneuron
