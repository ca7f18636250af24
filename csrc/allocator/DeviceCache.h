#pragma once
// One device's cache: the pools, the live blocks and the statistics, under one lock.
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/flat_hash_map.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "allocator/SpinLock.h"
#include "runtime/Queue.h"

namespace torchneuron {

struct BlockPool;
struct Block;

using OrderKey = std::tuple<int, size_t, uintptr_t>;

// Transparent: malloc looks a size up by its key, without building a Block.
struct BlockOrder {
  using is_transparent = void;
  bool operator()(const Block* a, const Block* b) const;
  bool operator()(const Block* a, const OrderKey& b) const;
  bool operator()(const OrderKey& a, const Block* b) const;
};

struct Block {
  int device;
  int stream;              // stream index that allocated it; reuse is limited to that stream
  size_t size;             // bytes of the block (rounded)
  size_t requested = 0;    // bytes the caller asked for
  BlockPool* pool;
  void* ptr;
  bool allocated = false;
  bool parked = false;     // freed into DeviceCache::parked_ (unmerged, not in the pool's tree)
  Block* prev = nullptr;   // neighbours within the same segment
  Block* next = nullptr;
  int event_count = 0;     // outstanding record_stream events before the block may be reused
  std::vector<int> stream_uses;
  // Where the block sits in its pool's tree while it is free there (set by DeviceCache::insertFree).
  std::set<Block*, BlockOrder>::iterator pos{};

  Block(int device, int stream, size_t size, BlockPool* pool, void* ptr)
      : device(device), stream(stream), size(size), pool(pool), ptr(ptr) {}
  bool isSplit() const { return prev != nullptr || next != nullptr; }
};

// A free block's place in its pool: by stream, then size (best fit), then address.
inline OrderKey orderKey(int stream, size_t size, const void* ptr) {
  return {stream, size, reinterpret_cast<uintptr_t>(ptr)};
}
inline OrderKey orderKey(const Block* b) { return orderKey(b->stream, b->size, b->ptr); }
inline bool BlockOrder::operator()(const Block* a, const Block* b) const { return orderKey(a) < orderKey(b); }
inline bool BlockOrder::operator()(const Block* a, const OrderKey& b) const { return orderKey(a) < b; }
inline bool BlockOrder::operator()(const OrderKey& a, const Block* b) const { return a < orderKey(b); }

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  std::set<Block*, BlockOrder> blocks;
  const bool is_small;
};

class DeviceCache {
 public:
  explicit DeviceCache(int device);
  ~DeviceCache();

  // Returns the block for `nbytes` on `stream` (now live), or throws torch.OutOfMemoryError.
  Block* malloc(int stream, size_t nbytes);
  // Frees the live block at `ptr`; false (nothing done) when `ptr` is not a live block of this device.
  bool freeIfLive(void* ptr);
  // record_stream for the live block at `ptr`; false when there is none on this device.
  bool recordStreamIfLive(void* ptr, int stream);
  void emptyCache();
  // Memory another executor allocated, counted as a segment with one live block (ExternalMemory.cpp).
  void chargeExternal(const void* ptr, size_t nbytes);
  void releaseExternal(const void* ptr, size_t nbytes);
  void setMemoryFraction(double fraction);

  c10::CachingDeviceAllocator::DeviceStats stats();
  void resetAccumulatedStats();
  void resetPeakStats();
  size_t reservedBytes();

 private:
  void update(c10::CachingAllocator::StatArray& stat, const BlockPool& pool, int64_t delta);
  void countInactiveSplit(const Block* block, int sign);
  void deactivate(const Block* block);
  void free(Block* block);
  // Block records come from and go back to spare_: a small op splits a block on allocation and merges it back
  // on free, and a heap allocation plus free per op for that was a tenth of the allocator's cost.
  Block* newBlock(int stream, size_t size, BlockPool* pool, void* ptr);
  void dropBlock(Block* block);
  // Likewise the pools' tree nodes: a split or merge removes one free block and inserts another, and reusing
  // the removed node saves a node allocation and free each time. Same ordering, same blocks chosen.
  void insertFree(BlockPool& pool, Block* block);
  void keepNode(std::set<Block*, BlockOrder>::node_type node);

  Block* takeCached(BlockPool& pool, int stream, size_t size);
  void takeFreeBlock(BlockPool& pool, std::set<Block*, BlockOrder>::iterator it);
  // The split and merge of a small op keep the free block's tree node where its new key still sorts:
  // the tree is then exactly what removing and reinserting it would give, without the rebalancing.
  Block* splitInPlace(BlockPool& pool, std::set<Block*, BlockOrder>::iterator it, size_t size);
  bool mergeInPlace(Block* block, Block* keep);
  Block* allocateSegment(BlockPool& pool, int stream, size_t size);
  void freeBlock(Block* block);  // a block no longer active joins its pool
  void coalesce(Block* block);   // a free block merges with its free neighbours and enters the tree
  void mergeInto(Block* dst, Block* src);
  // A small op frees its last result and allocates one of the same size: parking the freed block whole
  // (unmerged, out of the tree) lets that allocation take it back without a tree search, a split and a merge.
  // A parked block is a free block in every statistic; blocks that outlive kParked more frees, and all of them
  // before the cache is released or an allocation would need a new segment, are merged as any free block.
  Block* unpark(int stream, size_t size);
  void park(Block* block);
  Block* takeParked(size_t i);
  void mergeParked();
  void releaseCachedBlocks();
  void releaseFreeSegments(BlockPool& pool);
  void processEvents();
  void synchronizeAndFreeEvents();
  void reportExternal(const void* ptr, int64_t delta);
  [[noreturn]] void raiseOutOfMemory(size_t requested, size_t alloc_size);

  const int device_;
  SpinLock mutex_;
  BlockPool small_{true};
  BlockPool large_{false};
  c10::CachingDeviceAllocator::DeviceStats stats_;
  double memory_fraction_ = 1.0;
  struct PendingFree {
    Block* block;
    std::shared_ptr<Queue> queue;
    uint64_t seq;
  };
  std::vector<PendingFree> pending_;
  // Live allocations by pointer, under the same lock as the pools: allocation and free take one lock each.
  ska::flat_hash_map<void*, Block*> live_;
  std::vector<Block*> spare_;
  static constexpr size_t kParked = 8;
  Block* parked_[kParked] = {};  // oldest first
  size_t num_parked_ = 0;
  std::set<Block*, BlockOrder>::node_type spare_node_;
};

} // namespace torchneuron
