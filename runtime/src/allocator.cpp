#include "allocator.h"

#include <string>

#include "device.h"
#include "errors.h"

namespace hwport {

namespace {

void plain_wait(std::mutex& mutex) { mutex.lock(); }
AllocatorLockWaiter g_waiter = plain_wait;

// lock_guard, with the contended wait through g_waiter.
class AllocatorLock {
 public:
  explicit AllocatorLock(std::mutex& mutex) : mutex_(mutex) {
    if (!mutex_.try_lock()) g_waiter(mutex_);
  }
  ~AllocatorLock() { mutex_.unlock(); }
  AllocatorLock(const AllocatorLock&) = delete;
  AllocatorLock& operator=(const AllocatorLock&) = delete;

 private:
  std::mutex& mutex_;
};

}  // namespace

void set_allocator_lock_waiter(AllocatorLockWaiter waiter) {
  g_waiter = waiter ? waiter : plain_wait;
}

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  if (a->segment != b->segment) return a->segment < b->segment;
  return a->offset < b->offset;
}

CachingAllocator::~CachingAllocator() {
  // Blocks still referenced at process exit are left alone; cached ones go back to the plugin.
  try {
    empty_cache();
  } catch (...) {
  }
}

uint64_t CachingAllocator::round_up(uint64_t nbytes, uint64_t multiple) {
  // Callers bound nbytes by kMaxAllocation first, so this cannot wrap.
  return (nbytes + multiple - 1) / multiple * multiple;
}

uint64_t CachingAllocator::round_size(uint64_t nbytes) {
  if (nbytes < kMinBlock) return kMinBlock;
  return round_up(nbytes, kMinBlock);
}

Block* CachingAllocator::find_free(std::set<Block*, BySize>& pool, uint64_t size,
                                   HWP_Stream stream, bool segment_start) {
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  // The smallest fitting block (of this stream), or with segment_start the smallest that
  // begins its segment.
  while (it != pool.end() && (*it)->stream == stream && segment_start && (*it)->offset != 0)
    ++it;
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

Block* CachingAllocator::new_block() {
  auto owned = std::make_unique<Block>();
  Block* block = owned.get();
  blocks_.emplace(block, std::move(owned));
  return block;
}

Block* CachingAllocator::new_segment(uint64_t segment_size, HWP_Stream stream,
                                     bool small) {
  HWP_Buffer buffer = nullptr;
  const Plugin& plugin = *device_->plugin;
  HWP_Status status = plugin.memory.allocate(device_->index, segment_size, &buffer);
  if (status != HWP_OK || !buffer) return nullptr;
  ++stats_.num_device_allocs;
  stats_.reserved_bytes += segment_size;
  if (stats_.reserved_bytes > stats_.peak_reserved_bytes)
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  Block* block = new_block();
  block->segment = buffer;
  block->size = segment_size;
  block->stream = stream;
  block->small = small;
  return block;
}

Block* CachingAllocator::allocate(uint64_t nbytes, HWP_Stream stream, bool segment_start) {
  AllocatorLock lock(mutex_);
  if (nbytes > kMaxAllocation) {  // no device holds it; rounding it up would wrap
    ++stats_.num_ooms;
    raise(ErrorKind::OutOfMemory, "out of memory on " + device_->name + ": tried to allocate " +
                                      std::to_string(nbytes) + " bytes, more than any device " +
                                      "can hold (at most " + std::to_string(kMaxAllocation) +
                                      " bytes)");
  }
  if (!pending_.empty()) process_pending_locked(false);
  const uint64_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  auto& pool = small ? small_pool_ : large_pool_;

  Block* block = find_free(pool, size, stream, segment_start);
  if (!block) {
    uint64_t segment = small ? kSmallSegment
                             : (size < kMediumSegment / 2
                                    ? kMediumSegment
                                    : round_up(size, kLargeRound));
    block = new_segment(segment, stream, small);
    if (!block && segment != size) block = new_segment(size, stream, small);
    if (!block) {
      // Out of memory: give cached memory back to the device and retry once.
      ++stats_.num_cache_flushes;
      process_pending_locked(true);
      release_cached_locked();
      block = new_segment(size, stream, small);
    }
    if (!block) {
      ++stats_.num_ooms;
      // Bounded and fault-safe: the plugin's string is not trusted.
      const std::string msg = plugin_last_error(device_->plugin->get_last_error_fn);
      raise(ErrorKind::OutOfMemory, describe_oom(nbytes, msg));
    }
  }
  // Split off the remainder when it is worth keeping as its own block.
  const uint64_t remaining = block->size - size;
  if ((small && remaining >= kMinBlock) || (!small && remaining > kSmallSize)) {
    Block* rest = new_block();
    rest->segment = block->segment;
    rest->offset = block->offset + size;
    rest->size = remaining;
    rest->stream = stream;
    rest->small = block->small;
    rest->prev = block;
    rest->next = block->next;
    if (block->next) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool.insert(rest);
  }
  block->allocated = true;
  block->requested = nbytes;
  ++stats_.num_allocs;
  ++stats_.active_blocks;
  stats_.allocated_bytes += block->size;
  stats_.requested_bytes += nbytes;
  if (stats_.allocated_bytes > stats_.peak_allocated_bytes)
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  if (stats_.requested_bytes > stats_.peak_requested_bytes)
    stats_.peak_requested_bytes = stats_.requested_bytes;
  return block;
}

void CachingAllocator::insert_free(Block* block) {
  block->allocated = false;
  auto& pool = block->small ? small_pool_ : large_pool_;
  // Coalesce with free neighbours of the same segment.
  for (Block* n : {block->prev, block->next}) {
    if (!n || n->allocated || n->stream != block->stream) continue;
    pool.erase(n);
    if (n == block->prev) {
      block->offset = n->offset;
      block->prev = n->prev;
      if (n->prev) n->prev->next = block;
    } else {
      block->next = n->next;
      if (n->next) n->next->prev = block;
    }
    block->size += n->size;
    blocks_.erase(n);
  }
  pool.insert(block);
}

void CachingAllocator::free(Block* block) {
  if (!block) return;
  AllocatorLock lock(mutex_);
  ++stats_.num_frees;
  --stats_.active_blocks;
  stats_.allocated_bytes -= block->size;
  stats_.requested_bytes -= block->requested;
  if (block->other_streams.empty()) {
    insert_free(block);
    return;
  }
  const Plugin& plugin = *device_->plugin;
  PendingFree pending{block, {}};
  for (HWP_Stream s : block->other_streams) {
    HWP_Event event = nullptr;
    if (plugin.has_streams && plugin.stream.create_event(device_->index, &event) == HWP_OK &&
        plugin.stream.record_event(device_->index, s, event) == HWP_OK) {
      pending.events.push_back({s, event});
    } else {
      if (event) plugin.stream.destroy_event(device_->index, event);
      plugin.device.synchronize_device(device_->index);
    }
  }
  block->other_streams.clear();
  pending_.push_back(std::move(pending));
  ++stats_.pending_frees;
}

void CachingAllocator::record_stream(Block* block, HWP_Stream stream) {
  AllocatorLock lock(mutex_);  // forget_stream may change block->stream
  if (stream == block->stream) return;
  for (HWP_Stream s : block->other_streams)
    if (s == stream) return;
  block->other_streams.push_back(stream);
}

void CachingAllocator::forget_stream(HWP_Stream stream, HWP_Stream replacement) {
  if (!stream || stream == replacement) return;
  AllocatorLock lock(mutex_);
  const Plugin& plugin = *device_->plugin;
  // Events recorded on it: complete (its work is), so they go before the stream does.
  for (auto& p : pending_) {
    for (auto it = p.events.begin(); it != p.events.end();) {
      if (it->stream != stream) {
        ++it;
        continue;
      }
      plugin.stream.synchronize_event(device_->index, it->event);
      plugin.stream.destroy_event(device_->index, it->event);
      it = p.events.erase(it);
    }
  }
  // Its blocks move to `replacement`. Cached ones are re-inserted under the new key (and may
  // coalesce with the replacement's free neighbours), one at a time so that insert_free never
  // merges, and so deletes, a block still on the list.
  std::vector<Block*> cached;
  for (auto& entry : blocks_) {
    Block* b = entry.first;
    const bool moves = b->stream == stream;
    auto& others = b->other_streams;
    for (auto it = others.begin(); it != others.end();)
      it = (*it == stream || (moves && *it == replacement)) ? others.erase(it) : it + 1;
    if (!moves) continue;
    if (b->allocated)
      b->stream = replacement;  // live or pending: not in a pool
    else
      cached.push_back(b);
  }
  for (Block* b : cached) {
    (b->small ? small_pool_ : large_pool_).erase(b);
    b->stream = replacement;
    insert_free(b);
  }
  process_pending_locked(false);  // frees that waited only on this stream are done now
}

void CachingAllocator::process_pending_locked(bool wait) {
  const Plugin& plugin = *device_->plugin;
  std::vector<PendingFree> still;
  for (auto& p : pending_) {
    bool done = true;
    for (const StreamEvent& se : p.events) {
      HWP_Event e = se.event;
      HWP_Status st = wait ? plugin.stream.synchronize_event(device_->index, e)
                           : (plugin.stream.query_event
                                  ? plugin.stream.query_event(device_->index, e)
                                  : plugin.stream.synchronize_event(device_->index, e));
      if (st == HWP_ERROR_NOT_READY) done = false;
    }
    if (!done) {
      still.push_back(std::move(p));
      continue;
    }
    for (const StreamEvent& se : p.events) plugin.stream.destroy_event(device_->index, se.event);
    --stats_.pending_frees;
    insert_free(p.block);  // still marked allocated until now, so no neighbour merged it
  }
  pending_.swap(still);
}

void CachingAllocator::release_cached_locked() {
  const Plugin& plugin = *device_->plugin;
  plugin.device.synchronize_device(device_->index);
  for (auto* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {
        ++it;
        continue;
      }
      plugin.memory.deallocate(device_->index, b->segment);
      ++stats_.num_device_frees;
      stats_.reserved_bytes -= b->size;
      it = pool->erase(it);
      blocks_.erase(b);
    }
  }
}

void CachingAllocator::empty_cache() {
  AllocatorLock lock(mutex_);
  process_pending_locked(true);
  release_cached_locked();
}

AllocatorStats CachingAllocator::stats() {
  AllocatorLock lock(mutex_);
  if (!pending_.empty()) process_pending_locked(false);
  AllocatorStats out = stats_;
  out.cached_blocks = small_pool_.size() + large_pool_.size();
  return out;
}

void CachingAllocator::reset_peak() {
  AllocatorLock lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_requested_bytes = stats_.requested_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

std::string CachingAllocator::describe_oom(uint64_t nbytes, const std::string& plugin_message) {
  std::string msg = "out of memory on " + device_->name + ": tried to allocate " +
                    std::to_string(nbytes) + " bytes; allocator: " +
                    std::to_string(stats_.allocated_bytes) + " bytes allocated, " +
                    std::to_string(stats_.reserved_bytes) + " bytes reserved (cache released "
                    "and retried once)";
  HWP_MemoryStats ms{};
  ms.struct_size = sizeof(ms);
  const Plugin& plugin = *device_->plugin;
  if (plugin.memory.get_memory_stats &&
      plugin.memory.get_memory_stats(device_->index, &ms) == HWP_OK) {
    msg += "; device: " + std::to_string(ms.bytes_in_use) + " bytes in use";
    if (ms.bytes_limit) msg += " of a " + std::to_string(ms.bytes_limit) + " byte limit";
  }
  if (!plugin_message.empty()) msg += "; plugin says: " + plugin_message;
  return msg;
}

}  // namespace hwport
