// Collectives through the CCL table: backends per device, communicators, bootstrap, traffic.
#include "ccl.h"

#include <dlfcn.h>

#include <cstring>

#include "errors.h"
#include "plugin.h"

namespace hwport {

namespace {

struct Adapter {
  std::string path;
  void* handle = nullptr;
  CclBackend backend;
};

std::mutex g_mutex;
std::map<std::string, std::unique_ptr<Adapter>>& adapters() {
  static std::map<std::string, std::unique_ptr<Adapter>> a;
  return a;
}
std::map<std::string, std::unique_ptr<CclBackend>>& plugin_backends() {
  static std::map<std::string, std::unique_ptr<CclBackend>> b;
  return b;
}
std::map<std::string, CclTraffic> g_traffic;

void count(const char* kind, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CclTraffic& t = g_traffic[kind];
  t.calls += 1;
  t.bytes += bytes;
}

// The adapter's view of a device: its plugin's tables, by global id.
HWP_Status describe_device(void*, int32_t global_device, HWP_CclDeviceAccess* out) {
  const auto& devices = DeviceManager::instance().devices();
  if (!out || global_device < 0 || global_device >= static_cast<int32_t>(devices.size()))
    return HWP_ERROR_INVALID_ARGUMENT;
  Device* d = devices[static_cast<size_t>(global_device)].get();
  const Plugin& p = *d->plugin;
  HWP_CclDeviceAccess a{};
  a.struct_size = sizeof(a);
  a.device = d->index;
  a.flags = d->host_memory ? HWP_DEVICE_HOST_MEMORY : 0u;
  a.device_table = &p.device;
  a.memory = &p.memory;
  a.stream = p.has_streams ? &p.stream : nullptr;
  a.get_last_error = p.get_last_error_fn;
  a.dlpack_device_type = d->dlpack_type;
  a.dlpack_device_id = d->dlpack_id;
  const size_t n = out->struct_size < sizeof(a) ? out->struct_size : sizeof(a);
  std::memcpy(out, &a, n);
  out->struct_size = n;
  return HWP_OK;
}

void adapter_log(void*, int32_t, const char*) {}

HWP_CclAdapterHost* adapter_host() {
  static HWP_CclAdapterHost host{sizeof(HWP_CclAdapterHost), HWP_ABI_VERSION_MAJOR,
                                 HWP_ABI_VERSION_MINOR, nullptr, describe_device, adapter_log};
  return &host;
}

Adapter* find_adapter(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = adapters().find(name);
  return it == adapters().end() ? nullptr : it->second.get();
}

template <typename Fn>
Fn mpi_symbol(const char* name) {
  Adapter* a = find_adapter("mpi");
  if (!a)
    raise(ErrorKind::Runtime,
          "hwport.distributed: the MPI adapter is not loaded (init_parallel_env loads it)");
  return reinterpret_cast<Fn>(dlsym(a->handle, name));
}

void check_tensor(const Tensor& t, Device* device, const char* op, const char* arg) {
  if (!t.storage) raise(ErrorKind::Value, std::string(op) + ": " + arg + " has no storage");
  if (t.device() != device)
    raise(ErrorKind::Value, std::string(op) + ": " + arg + " is on " + t.device()->name +
                                ", the communicator's device is " + device->name);
  if (!t.is_contiguous())
    raise(ErrorKind::Value, std::string(op) + ": " + arg + " must be contiguous");
}

uint64_t elements(const Tensor& t) { return static_cast<uint64_t>(t.numel()); }

}  // namespace

std::string CclBackend::describe(const char* call, HWP_Status status) const {
  std::string msg = name + " CCL: " + call + " failed with " + status_name(status);
  const std::string detail = plugin_last_error(last_error);
  if (!detail.empty()) msg += ": " + detail;
  return msg;
}

void ccl_load_adapter(const std::string& name, const std::string& path) {
  if (find_adapter(name)) return;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    raise(ErrorKind::NotSupported, "the " + name + " CCL adapter (" + path +
                                       ") could not be loaded: " + dlerror());
  auto init = reinterpret_cast<HWP_CclAdapterInitFn>(dlsym(handle, HWP_CCL_ADAPTER_INIT_SYMBOL));
  if (!init) {
    dlclose(handle);
    raise(ErrorKind::NotSupported, path + " does not export " HWP_CCL_ADAPTER_INIT_SYMBOL);
  }
  const HWP_CclTable* table = nullptr;
  const char* (*last_error)(void) = nullptr;
  const HWP_Status st = init(adapter_host(), &table, &last_error);
  if (st != HWP_OK || !table) {
    // Kept loaded: an adapter may have started threads (MPI's) that still run its code.
    raise(ErrorKind::NotSupported, "the " + name + " CCL adapter failed to start (" +
                                       status_name(st) + "): " + plugin_last_error(last_error));
  }
  auto a = std::make_unique<Adapter>();
  a->path = path;
  a->handle = handle;
  a->backend.name = name;
  a->backend.adapter = true;
  a->backend.last_error = last_error;
  std::memcpy(&a->backend.table, table,
              table->struct_size < sizeof(HWP_CclTable) ? table->struct_size
                                                        : sizeof(HWP_CclTable));
  std::lock_guard<std::mutex> lock(g_mutex);
  adapters()[name] = std::move(a);
}

CclBackend* ccl_backend_for(Device* device) {
  Plugin* p = device->plugin;
  if (p->has_ccl_table) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& slot = plugin_backends()[p->device_type];
    if (!slot) {
      slot = std::make_unique<CclBackend>();
      slot->name = p->device_type;
      slot->table = p->ccl;
      slot->last_error = p->get_last_error_fn;
    }
    return slot.get();
  }
  if (device->dlpack_type == HWP_DLPACK_CUDA && !device->host_memory) {
    if (Adapter* a = find_adapter("nccl")) return &a->backend;
  }
  if (Adapter* a = find_adapter("mpi")) return &a->backend;
  raise(ErrorKind::NotSupported,
        "hwport.distributed: " + device->name +
            " has no CCL table of its own and the MPI adapter is not loaded (is MPI installed? "
            "init_parallel_env loads it)");
}

std::string ccl_unique_id(Device* device) {
  CclBackend* b = ccl_backend_for(device);
  std::string id(b->table.unique_id_size, '\0');
  const HWP_Status st = b->table.get_unique_id(&id[0]);
  if (st != HWP_OK) raise(ErrorKind::Runtime, b->describe("get_unique_id", st));
  return id;
}

std::shared_ptr<CclComm> ccl_comm_init(Device* device, int32_t nranks, int32_t rank,
                                       const std::string& id) {
  CclBackend* b = ccl_backend_for(device);
  if (id.size() != b->table.unique_id_size)
    raise(ErrorKind::Value, "comm_init: the unique id has " + std::to_string(id.size()) +
                                " bytes, the " + b->name + " backend's have " +
                                std::to_string(b->table.unique_id_size));
  device->ensure_initialized();
  HWP_CclComm comm = nullptr;
  const int32_t dev = b->adapter ? device->global_id : device->index;
  const HWP_Status st = b->table.comm_init(nranks, rank, id.data(), dev, &comm);
  if (st != HWP_OK) raise(ErrorKind::Runtime, b->describe("comm_init", st));
  return std::make_shared<CclComm>(device, b, comm, rank, nranks);
}

std::pair<int32_t, int32_t> ccl_world() {
  auto fn = mpi_symbol<HWP_Status (*)(int32_t*, int32_t*)>("hwport_ccl_mpi_world");
  int32_t rank = 0, size = 1;
  if (!fn || fn(&rank, &size) != HWP_OK)
    raise(ErrorKind::Runtime, "hwport.distributed: the MPI adapter cannot tell rank and size");
  return {rank, size};
}

std::string ccl_world_broadcast(const std::string& data, int32_t root) {
  auto fn = mpi_symbol<HWP_Status (*)(void*, uint32_t, int32_t)>("hwport_ccl_mpi_bcast_bytes");
  std::string buf = data;
  Adapter* a = find_adapter("mpi");
  const HWP_Status st = fn ? fn(&buf[0], static_cast<uint32_t>(buf.size()), root)
                           : HWP_ERROR_NOT_FOUND;
  if (st != HWP_OK) raise(ErrorKind::Runtime, a->backend.describe("bootstrap broadcast", st));
  return buf;
}

void ccl_group(Device* device, bool start) {
  CclBackend* b = ccl_backend_for(device);
  const HWP_Status st = start ? b->table.group_start() : b->table.group_end();
  if (st != HWP_OK)
    raise(ErrorKind::Runtime, b->describe(start ? "group_start" : "group_end", st));
}

std::map<std::string, CclTraffic> ccl_traffic() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_traffic;
}

void ccl_reset_traffic() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_traffic.clear();
}

// ---- CclComm ------------------------------------------------------------------------------

CclComm::CclComm(Device* device, CclBackend* backend, HWP_CclComm comm, int32_t rank,
                 int32_t nranks)
    : device_(device), backend_(backend), comm_(comm), rank_(rank), nranks_(nranks) {}

CclComm::~CclComm() {
  if (comm_) backend_->table.comm_destroy(comm_);
}

HWP_CclComm CclComm::checked(const char* what) {
  if (!comm_)
    raise(ErrorKind::Runtime,
          std::string(what) + ": the communicator was aborted or destroyed");
  return comm_;
}

void CclComm::fail(const char* call, HWP_Status status) {
  raise(status == HWP_ERROR_INVALID_ARGUMENT ? ErrorKind::Value
        : status == HWP_ERROR_NOT_SUPPORTED  ? ErrorKind::NotSupported
        : status == HWP_ERROR_OUT_OF_MEMORY  ? ErrorKind::OutOfMemory
                                             : ErrorKind::Runtime,
        backend_->describe(call, status));
}

#define CCL_ARGS(t) (t).storage->buffer(), (t).byte_offset()
#define HWP_DT(t) static_cast<HWP_DType>((t).dtype)

namespace {
void same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype != b.dtype)
    raise(ErrorKind::Value, std::string(op) + ": the input is " + dtype_name(a.dtype) +
                                " and the output " + dtype_name(b.dtype) +
                                "; they must be the same dtype");
}
void check_rank(int32_t rank, int32_t nranks, const char* op, const char* what) {
  if (rank < 0 || rank >= nranks)
    raise(ErrorKind::Value, std::string(op) + ": " + what + " " + std::to_string(rank) +
                                " is not a rank of the communicator (0.." +
                                std::to_string(nranks - 1) + ")");
}
void check_count(uint64_t got, uint64_t want, const char* op, const char* what) {
  if (got != want)
    raise(ErrorKind::Value, std::string(op) + ": " + what + " has " + std::to_string(got) +
                                " elements, expected " + std::to_string(want));
}
}  // namespace

void CclComm::all_reduce(const Tensor& in, const Tensor& out, int32_t op) {
  HWP_CclComm c = checked("all_reduce");
  check_tensor(in, device_, "all_reduce", "the input");
  check_tensor(out, device_, "all_reduce", "the output");
  same_dtype(in, out, "all_reduce");
  check_count(elements(out), elements(in), "all_reduce", "the output");
  HWP_Stream s = device_->current_stream();
  const HWP_Status st = backend_->table.all_reduce(CCL_ARGS(in), CCL_ARGS(out), elements(in),
                                                   HWP_DT(in), op, c, s);
  if (st != HWP_OK) fail("all_reduce", st);
  count("all_reduce", elements(in) * itemsize(in.dtype));
}

void CclComm::broadcast(const Tensor& in, const Tensor& out, int32_t root) {
  HWP_CclComm c = checked("broadcast");
  check_tensor(in, device_, "broadcast", "the input");
  check_tensor(out, device_, "broadcast", "the output");
  same_dtype(in, out, "broadcast");
  check_count(elements(out), elements(in), "broadcast", "the output");
  check_rank(root, nranks_, "broadcast", "root");
  const HWP_Status st = backend_->table.broadcast(CCL_ARGS(in), CCL_ARGS(out), elements(in),
                                                  HWP_DT(in), root, c,
                                                  device_->current_stream());
  if (st != HWP_OK) fail("broadcast", st);
  count("broadcast", elements(in) * itemsize(in.dtype));
}

void CclComm::reduce(const Tensor& in, const Tensor& out, int32_t op, int32_t root) {
  HWP_CclComm c = checked("reduce");
  check_tensor(in, device_, "reduce", "the input");
  check_tensor(out, device_, "reduce", "the output");
  same_dtype(in, out, "reduce");
  check_count(elements(out), elements(in), "reduce", "the output");
  check_rank(root, nranks_, "reduce", "root");
  HWP_Stream s = device_->current_stream();
  HWP_Status st;
  if (backend_->table.reduce) {
    st = backend_->table.reduce(CCL_ARGS(in), CCL_ARGS(out), elements(in), HWP_DT(in), op, root,
                                c, s);
  } else {  // fallback: all_reduce into a scratch tensor; root keeps it
    Tensor scratch = Tensor::empty(in.shape, in.dtype, device_, "reduce");
    st = backend_->table.all_reduce(CCL_ARGS(in), CCL_ARGS(scratch), elements(in), HWP_DT(in),
                                    op, c, s);
    if (st == HWP_OK && rank_ == root && elements(in))
      st = device_->plugin->memory.copy_d2d(device_->index, CCL_ARGS(out), CCL_ARGS(scratch),
                                            elements(in) * itemsize(in.dtype));
  }
  if (st != HWP_OK) fail("reduce", st);
  count("reduce", elements(in) * itemsize(in.dtype));
}

void CclComm::all_gather(const Tensor& in, const Tensor& out) {
  HWP_CclComm c = checked("all_gather");
  check_tensor(in, device_, "all_gather", "the input");
  check_tensor(out, device_, "all_gather", "the output");
  same_dtype(in, out, "all_gather");
  check_count(elements(out), elements(in) * static_cast<uint64_t>(nranks_), "all_gather",
              "the output");
  const HWP_Status st = backend_->table.all_gather(CCL_ARGS(in), CCL_ARGS(out), elements(in),
                                                   HWP_DT(in), c, device_->current_stream());
  if (st != HWP_OK) fail("all_gather", st);
  count("all_gather", elements(out) * itemsize(in.dtype));
}

void CclComm::reduce_scatter(const Tensor& in, const Tensor& out, int32_t op) {
  HWP_CclComm c = checked("reduce_scatter");
  check_tensor(in, device_, "reduce_scatter", "the input");
  check_tensor(out, device_, "reduce_scatter", "the output");
  same_dtype(in, out, "reduce_scatter");
  check_count(elements(in), elements(out) * static_cast<uint64_t>(nranks_), "reduce_scatter",
              "the input");
  HWP_Stream s = device_->current_stream();
  HWP_Status st;
  const uint64_t n = elements(out);
  if (backend_->table.reduce_scatter) {
    st = backend_->table.reduce_scatter(CCL_ARGS(in), CCL_ARGS(out), n, HWP_DT(in), op, c, s);
  } else {  // fallback: all_reduce into a scratch tensor, keep this rank's block
    Tensor scratch = Tensor::empty(in.shape, in.dtype, device_, "reduce_scatter");
    st = backend_->table.all_reduce(CCL_ARGS(in), CCL_ARGS(scratch), elements(in), HWP_DT(in),
                                    op, c, s);
    const uint64_t bytes = n * itemsize(in.dtype);
    if (st == HWP_OK && bytes)
      st = device_->plugin->memory.copy_d2d(device_->index, CCL_ARGS(out),
                                            scratch.storage->buffer(),
                                            scratch.byte_offset() + bytes * rank_, bytes);
  }
  if (st != HWP_OK) fail("reduce_scatter", st);
  count("reduce_scatter", elements(in) * itemsize(in.dtype));
}

void CclComm::all_to_all(const Tensor& in, const Tensor& out) {
  HWP_CclComm c = checked("all_to_all");
  check_tensor(in, device_, "all_to_all", "the input");
  check_tensor(out, device_, "all_to_all", "the output");
  same_dtype(in, out, "all_to_all");
  check_count(elements(out), elements(in), "all_to_all", "the output");
  if (elements(in) % static_cast<uint64_t>(nranks_))
    raise(ErrorKind::Value, "all_to_all: " + std::to_string(elements(in)) +
                                " elements do not split into " + std::to_string(nranks_) +
                                " equal blocks");
  const uint64_t n = elements(in) / static_cast<uint64_t>(nranks_);
  HWP_Stream s = device_->current_stream();
  HWP_Status st;
  if (backend_->table.all_to_all) {
    st = backend_->table.all_to_all(CCL_ARGS(in), CCL_ARGS(out), n, HWP_DT(in), c, s);
  } else {  // fallback: one group of send/recv pairs
    const uint64_t bytes = n * itemsize(in.dtype);
    st = backend_->table.group_start();
    for (int32_t peer = 0; st == HWP_OK && peer < nranks_; ++peer) {
      st = backend_->table.send(in.storage->buffer(), in.byte_offset() + bytes * peer, n,
                                HWP_DT(in), peer, c, s);
      if (st == HWP_OK)
        st = backend_->table.recv(out.storage->buffer(), out.byte_offset() + bytes * peer, n,
                                  HWP_DT(in), peer, c, s);
    }
    const HWP_Status end = backend_->table.group_end();
    if (st == HWP_OK) st = end;
  }
  if (st != HWP_OK) fail("all_to_all", st);
  count("all_to_all", elements(in) * itemsize(in.dtype));
}

void CclComm::send(const Tensor& t, int32_t peer) {
  HWP_CclComm c = checked("send");
  check_tensor(t, device_, "send", "the tensor");
  check_rank(peer, nranks_, "send", "peer");
  const HWP_Status st = backend_->table.send(CCL_ARGS(t), elements(t), HWP_DT(t), peer, c,
                                             device_->current_stream());
  if (st != HWP_OK) fail("send", st);
  count("send", elements(t) * itemsize(t.dtype));
}

void CclComm::recv(const Tensor& t, int32_t peer) {
  HWP_CclComm c = checked("recv");
  check_tensor(t, device_, "recv", "the tensor");
  check_rank(peer, nranks_, "recv", "peer");
  const HWP_Status st = backend_->table.recv(CCL_ARGS(t), elements(t), HWP_DT(t), peer, c,
                                             device_->current_stream());
  if (st != HWP_OK) fail("recv", st);
  count("recv", elements(t) * itemsize(t.dtype));
}

std::shared_ptr<CclComm> CclComm::split(int32_t color, int32_t key, int32_t new_rank,
                                        int32_t new_nranks) {
  HWP_CclComm c = checked("comm_split");
  HWP_CclComm out = nullptr;
  const HWP_Status st = backend_->table.comm_split(c, color, key, &out);
  if (st != HWP_OK) fail("comm_split", st);
  if (!out) return nullptr;
  return std::make_shared<CclComm>(device_, backend_, out, new_rank, new_nranks);
}

void CclComm::abort() {
  if (comm_) backend_->table.comm_abort(comm_);
  comm_ = nullptr;
}

std::string CclComm::async_error() {
  if (!comm_) return "";
  HWP_Status err = HWP_OK;
  const HWP_Status st = backend_->table.comm_get_async_error(comm_, &err);
  if (st != HWP_OK) fail("comm_get_async_error", st);
  return err == HWP_OK ? std::string() : backend_->describe("a collective", err);
}

}  // namespace hwport
