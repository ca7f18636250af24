#pragma once
// The device cache's lock. A small op allocates its result and frees the previous one, each under this lock;
// with std::mutex that was two out-of-line pthread calls (and owner bookkeeping) per acquisition, about a
// tenth of the op's overhead over the CPU, where glibc serves small sizes from a per-thread cache without a
// lock. The lock is rarely contended (autograd and queue threads allocating at once) and held briefly, except
// when an out-of-memory retry or empty_cache waits for a stream: a waiter spins a little, yields, then sleeps.
#include <atomic>
#include <chrono>
#include <thread>

namespace torchneuron {

class SpinLock {
 public:
  void lock() {
    if (__builtin_expect(locked_.exchange(true, std::memory_order_acquire), false)) lockSlow();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  void lockSlow() {
    for (unsigned attempt = 0;; ++attempt) {
      if (!locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire)) return;
      if (attempt < 64) {
        pause();
      } else if (attempt < 256) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  std::atomic<bool> locked_{false};
};

} // namespace torchneuron
