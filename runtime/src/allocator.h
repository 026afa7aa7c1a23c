// Caching allocator for one device: best-fit over cached blocks with splitting and coalescing,
// sizes rounded to classes, pools per stream (a block freed on a stream is reused only by that
// stream, which orders the reuse after earlier work), cross-stream uses deferred by events.
// Streams are raw handles here: whoever owns a stream calls forget_stream before destroying it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <set>
#include <vector>

#include "hwport/device.h"

namespace hwport {

// How a thread waits for an allocator's mutex that another thread holds. The allocator calls
// the plugin inside its critical sections, and a plugin written in Python runs there under
// the GIL (which Python hands between threads at any bytecode): a thread that waited holding
// the GIL would deadlock with it. The Python module installs a waiter that releases the GIL
// while it waits; the default just waits.
using AllocatorLockWaiter = void (*)(std::mutex& mutex);
void set_allocator_lock_waiter(AllocatorLockWaiter waiter);

struct Device;

struct Block {
  HWP_Buffer segment = nullptr;  // the plugin allocation this block lives in
  uint64_t offset = 0;           // byte offset inside the segment
  uint64_t size = 0;             // rounded size
  uint64_t requested = 0;
  HWP_Stream stream = nullptr;   // allocation stream: the pool the block returns to
  bool allocated = false;
  bool small = false;
  Block* prev = nullptr;  // neighbours inside the same segment
  Block* next = nullptr;
  std::vector<HWP_Stream> other_streams;  // streams besides `stream` that used it
};

struct AllocatorStats {
  uint64_t allocated_bytes = 0;       // live blocks (rounded sizes)
  uint64_t requested_bytes = 0;       // live blocks (as asked)
  uint64_t reserved_bytes = 0;        // segments held from the plugin
  uint64_t peak_allocated_bytes = 0;
  uint64_t peak_requested_bytes = 0;  // as asked: what a framework without rounding would hold
  uint64_t peak_reserved_bytes = 0;
  uint64_t num_allocs = 0;            // allocate() calls served
  uint64_t num_frees = 0;
  uint64_t num_device_allocs = 0;     // calls into the plugin's allocate
  uint64_t num_device_frees = 0;      // calls into the plugin's deallocate
  uint64_t num_cache_flushes = 0;     // out-of-memory retries that released the cache
  uint64_t num_ooms = 0;
  uint64_t active_blocks = 0;
  uint64_t cached_blocks = 0;
  uint64_t pending_frees = 0;         // blocks waiting on another stream's event
};

class CachingAllocator {
 public:
  static constexpr uint64_t kMinBlock = 512;
  static constexpr uint64_t kSmallSize = 1 << 20;         // <= 1 MiB: small pool
  static constexpr uint64_t kSmallSegment = 2 << 20;      // small blocks come from 2 MiB segments
  static constexpr uint64_t kMediumSegment = 20 << 20;    // 1..10 MiB requests: 20 MiB segments
  static constexpr uint64_t kLargeRound = 2 << 20;
  // Larger requests fail as out of memory before any rounding (INT64_MAX: byte offsets cross
  // the ABI as int64; a multiple of kLargeRound below it keeps round_up from wrapping).
  static constexpr uint64_t kMaxAllocation = (uint64_t{1} << 63) - kLargeRound;

  explicit CachingAllocator(Device* device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws hwport::Error(OutOfMemory) with the device's stats when even a retry after
  // releasing the cache fails. segment_start: the block begins its segment (offset 0), for
  // memory handed to a plugin as a bare buffer (kernel workspace).
  Block* allocate(uint64_t nbytes, HWP_Stream stream, bool segment_start = false);
  void free(Block* block);
  // Marks that `stream` (not the allocation stream) uses `block`: its reuse waits for it.
  void record_stream(Block* block, HWP_Stream stream);
  // `stream` is about to be destroyed and its work has completed: its blocks (cached, pending
  // or live) move to `replacement` (the default stream), it leaves every block's list of
  // streams, and the events recorded on it are resolved. Afterwards the allocator holds no
  // trace of the handle, which a new stream may reuse.
  void forget_stream(HWP_Stream stream, HWP_Stream replacement);
  // Synchronizes the device and returns every fully free segment to the plugin.
  void empty_cache();
  AllocatorStats stats();
  void reset_peak();

 private:
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct StreamEvent {
    HWP_Stream stream;  // where it was recorded
    HWP_Event event;
  };
  struct PendingFree {
    Block* block;
    std::vector<StreamEvent> events;
  };
  static uint64_t round_up(uint64_t nbytes, uint64_t multiple);
  static uint64_t round_size(uint64_t nbytes);
  Block* find_free(std::set<Block*, BySize>& pool, uint64_t size, HWP_Stream stream,
                   bool segment_start);
  Block* new_block();
  Block* new_segment(uint64_t segment_size, HWP_Stream stream, bool small);
  void insert_free(Block* block);
  void release_cached_locked();
  void process_pending_locked(bool wait);
  std::string describe_oom(uint64_t nbytes, const std::string& plugin_message);

  Device* device_;
  std::mutex mutex_;
  std::set<Block*, BySize> small_pool_, large_pool_;
  std::vector<PendingFree> pending_;
  std::unordered_map<Block*, std::unique_ptr<Block>> blocks_;  // owns every block
  AllocatorStats stats_;
};

}  // namespace hwport
