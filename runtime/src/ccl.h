// Collectives: each device's CCL backend (its plugin's table when it has a 1.2 one, else an
// adapter: NCCL for CUDA memory, MPI for everything), communicators over tensors, and the
// bootstrap over MPI that hands unique ids to the members.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hwport/ccl.h"
#include "tensor.h"

namespace hwport {

// One source of collectives: a plugin's table (device ids are the plugin's) or an adapter's
// (device ids are the host's global ids).
struct CclBackend {
  std::string name;  // "cpu" (a plugin's device type), "mpi", "nccl"
  HWP_CclTable table{};
  const char* (*last_error)(void) = nullptr;
  bool adapter = false;
  std::string describe(const char* call, HWP_Status status) const;
};

// Per collective kind: calls and payload bytes (the elements named by the call, times the
// element size; all_gather / reduce_scatter / all_to_all count the whole nranks * count buffer).
struct CclTraffic {
  uint64_t calls = 0;
  uint64_t bytes = 0;
};

class CclComm {
 public:
  CclComm(Device* device, CclBackend* backend, HWP_CclComm comm, int32_t rank, int32_t nranks);
  ~CclComm();
  CclComm(const CclComm&) = delete;
  CclComm& operator=(const CclComm&) = delete;

  int32_t rank() const { return rank_; }
  int32_t nranks() const { return nranks_; }
  Device* device() const { return device_; }
  const std::string& backend_name() const { return backend_->name; }

  // Tensors must be contiguous, on this communicator's device, of equal dtype; `out` may be
  // `in` (in place) where the table allows it. Each runs on the device's current stream.
  void all_reduce(const Tensor& in, const Tensor& out, int32_t op);
  void broadcast(const Tensor& in, const Tensor& out, int32_t root);
  void reduce(const Tensor& in, const Tensor& out, int32_t op, int32_t root);
  void all_gather(const Tensor& in, const Tensor& out);
  void reduce_scatter(const Tensor& in, const Tensor& out, int32_t op);
  void all_to_all(const Tensor& in, const Tensor& out);
  void send(const Tensor& t, int32_t peer);
  void recv(const Tensor& t, int32_t peer);
  // Members with the same color >= 0 form a new communicator (nullptr for color < 0); the
  // caller knows the new rank and size (ranked by (key, old rank)).
  std::shared_ptr<CclComm> split(int32_t color, int32_t key, int32_t new_rank,
                                 int32_t new_nranks);
  void abort();
  std::string async_error();

 private:
  HWP_CclComm checked(const char* what);
  void fail(const char* call, HWP_Status status);

  Device* device_;
  CclBackend* backend_;
  HWP_CclComm comm_;
  int32_t rank_, nranks_;
};

// Loads the adapter library `name` ("mpi", "nccl") at `path`. Throws with the reason when it
// does not load; loading twice is a no-op.
void ccl_load_adapter(const std::string& name, const std::string& path);
// The backend that serves `device`; throws NotSupported naming what is missing.
CclBackend* ccl_backend_for(Device* device);
// A new unique id of `device`'s backend.
std::string ccl_unique_id(Device* device);
std::shared_ptr<CclComm> ccl_comm_init(Device* device, int32_t nranks, int32_t rank,
                                       const std::string& id);
// Bootstrap over MPI_COMM_WORLD (the MPI adapter must be loaded): (rank, size), and a
// broadcast of bytes from `root` (collective over the world).
std::pair<int32_t, int32_t> ccl_world();
std::string ccl_world_broadcast(const std::string& data, int32_t root);
// group_start / group_end of `device`'s backend (per calling thread; calls in between are
// issued together at the outermost end).
void ccl_group(Device* device, bool start);
// Traffic per collective kind since load (or the last reset).
std::map<std::string, CclTraffic> ccl_traffic();
void ccl_reset_traffic();

}  // namespace hwport
