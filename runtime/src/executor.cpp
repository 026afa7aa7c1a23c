#include "executor.h"

#include <algorithm>
#include <sstream>

#include "errors.h"
#include "kernel_registry.h"
#include "ops.h"

namespace hwport {

namespace {

constexpr uint64_t kArenaAlign = 256;  // every value's bytes start on this boundary

uint64_t aligned(uint64_t n) { return (std::max<uint64_t>(n, 1) + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

bool contiguous_layout(const Shape& shape, const Shape& strides) {
  Tensor t;
  t.shape = shape;
  t.strides = strides;
  return t.is_contiguous();
}

struct Placement {
  int slot;
  uint64_t nbytes;
  size_t first, last;  // instructions defining it and using it last (inclusive)
  uint64_t offset = 0;
};

// Offsets in one arena: largest values first, each at the lowest offset free of every placed
// value whose lifetime overlaps its own (TFLite's greedy-by-size arena planner).
uint64_t place_greedy(std::vector<Placement>& items) {
  std::sort(items.begin(), items.end(), [](const Placement& a, const Placement& b) {
    return a.nbytes != b.nbytes ? a.nbytes > b.nbytes : a.first < b.first;
  });
  uint64_t total = 0;
  std::vector<const Placement*> placed;
  for (Placement& p : items) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Placement* q : placed)
      if (q->first <= p.last && p.first <= q->last) busy.emplace_back(q->offset, q->offset + q->nbytes);
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + p.nbytes <= lo) break;
      at = std::max(at, hi);
    }
    p.offset = at;
    total = std::max(total, at + p.nbytes);
    placed.push_back(&p);
  }
  return total;
}

}  // namespace

Executor::Executor(Device* device, std::vector<SlotMeta> slots,
                   std::vector<std::pair<std::string, int>> feeds,
                   std::vector<std::pair<int, Tensor>> bound, std::vector<Instr> instrs,
                   std::vector<int> outputs, std::vector<std::pair<int, int>> writes)
    : device_(device), meta_(std::move(slots)), feeds_(std::move(feeds)),
      outputs_(std::move(outputs)), instrs_(std::move(instrs)), workspaces_(device),
      writes_(std::move(writes)) {
  const size_t n = meta_.size();
  auto check_slot = [n](int s) {
    if (s < 0 || static_cast<size_t>(s) >= n)
      raise(ErrorKind::Value, "Executor: value slot " + std::to_string(s) + " out of range");
  };
  slots_.resize(n);
  is_view_.assign(n, false);
  is_fed_.assign(n, false);
  is_bound_.assign(n, false);
  root_.resize(n);
  for (size_t s = 0; s < n; ++s) {
    root_[s] = static_cast<int>(s);
    slots_[s].shape = meta_[s].shape;
    slots_[s].dtype = meta_[s].dtype;
    slots_[s].strides = contiguous_strides(meta_[s].shape);
  }
  for (const auto& [name, s] : feeds_) {
    check_slot(s);
    is_fed_[s] = true;
  }
  for (auto& [s, t] : bound) {
    check_slot(s);
    if (t.device() != device_)
      raise(ErrorKind::Value, "Executor: a bound tensor of slot " + std::to_string(s) + " is on " +
                                  t.device()->name + ", the program runs on " + device_->name);
    slots_[s] = contiguous(t);  // the lowering computed view layouts over contiguous roots
    is_bound_[s] = true;
  }
  for (size_t i = 0; i < instrs_.size(); ++i) {
    Instr& ins = instrs_[i];
    for (int s : ins.in) check_slot(s);
    for (int s : ins.out) check_slot(s);
    if (ins.kind == Kind::If || ins.kind == Kind::While) {
      for (const auto* v : {&ins.args, &ins.yields, &ins.else_yields})
        for (int s : *v) check_slot(s);
      const bool loop = ins.kind == Kind::While;
      if (ins.mid < i + 1 || ins.end < ins.mid || ins.end > instrs_.size() ||
          (loop && (ins.args.size() + 1 != ins.in.size() || ins.yields.size() != ins.in.size() ||
                    ins.out.size() + 1 != ins.in.size())) ||
          (!loop && (ins.yields.size() != ins.out.size() ||
                     ins.else_yields.size() != ins.out.size())))
        raise(ErrorKind::Value, "Executor: malformed " + std::string(loop ? "while" : "if") +
                                    " at instruction " + std::to_string(i));
      continue;
    }
    if (ins.kind == Kind::View) {
      const int out = ins.out.at(0);
      is_view_[out] = true;
      root_[out] = root_[ins.in.at(0)];
      slots_[out].strides = ins.strides;
      continue;
    }
    if (ins.kind == Kind::Launch) {
      if (!ins.function)
        raise(ErrorKind::Value, "Executor: launch at instruction " + std::to_string(i) +
                                    " has no function");
      if (ins.function->device() != device_)
        raise(ErrorKind::Value, "Executor: launch of '" + ins.function->name() +
                                    "' at instruction " + std::to_string(i) +
                                    ": the function is compiled for " +
                                    ins.function->device()->name + ", the program runs on " +
                                    device_->name);
      std::vector<bool> written(ins.out.size(), false);
      for (const LaunchArg& a : ins.launch_args) {
        const size_t limit = a.kind == LaunchArg::Kind::In    ? ins.in.size()
                             : a.kind == LaunchArg::Kind::Out ? ins.out.size()
                                                              : 1;
        if (a.index < 0 || static_cast<size_t>(a.index) >= limit)
          raise(ErrorKind::Value, "Executor: launch of '" + ins.function->name() +
                                      "' at instruction " + std::to_string(i) +
                                      ": argument index " + std::to_string(a.index) +
                                      " out of range");
        if (a.kind == LaunchArg::Kind::Out) written[a.index] = true;
      }
      for (size_t k = 0; k < written.size(); ++k)
        if (!written[k])
          raise(ErrorKind::Value, "Executor: launch of '" + ins.function->name() +
                                      "' at instruction " + std::to_string(i) + ": output " +
                                      std::to_string(k) + " is no argument of the kernel");
      ins.kernel = ins.function->name();
      continue;
    }
    if (ins.kind == Kind::Ccl) {
      if (!ins.comm)
        raise(ErrorKind::Value, "Executor: collective at instruction " + std::to_string(i) +
                                    " has no communicator");
      if (ins.comm->device() != device_)
        raise(ErrorKind::Value, "Executor: the collective at instruction " + std::to_string(i) +
                                    " communicates on " + ins.comm->device()->name +
                                    ", the program runs on " + device_->name);
      const bool sends = ins.ccl == CclCall::Send, recvs = ins.ccl == CclCall::Recv;
      if (ins.in.size() != (recvs ? 0u : 1u) || ins.out.size() != (sends ? 0u : 1u))
        raise(ErrorKind::Value, "Executor: malformed collective at instruction " +
                                    std::to_string(i));
      continue;
    }
    ins.op = op_id(ins.kernel);
    for (int s : ins.out) ins.skip |= numel(meta_[s].shape) == 0;
  }
  Device* cpu = DeviceManager::instance().cpu();
  for (Instr& ins : instrs_)
    ins.fallback = ins.kind == Kind::Kernel && !ins.skip && cpu && device_ != cpu &&
                   !device_->plugin->kernels.find(ins.op, ins.dtype);
  for (int s : outputs_) check_slot(s);
  for (const auto& [v, b] : writes_) {
    check_slot(v);
    check_slot(b);
    if (!is_bound_[b] || meta_[v].shape != meta_[b].shape || meta_[v].dtype != meta_[b].dtype)
      raise(ErrorKind::Value, "Executor: write of slot " + std::to_string(v) + " into slot " +
                                  std::to_string(b) + ": the target must be a bound tensor of "
                                  "the value's shape and dtype");
  }
  add_contiguous_copies();
  plan_memory();
  for (const Instr& ins : instrs_) {
    std::vector<const Tensor*> in;
    std::vector<Tensor*> out;
    for (int s : ins.in) in.push_back(&slots_[s]);
    for (int s : ins.out) out.push_back(&slots_[s]);
    in_ptrs_.push_back(std::move(in));
    out_ptrs_.push_back(std::move(out));
    std::vector<CodegenArg> launch_args;
    for (const LaunchArg& a : ins.launch_args) {
      CodegenArg c;
      switch (a.kind) {
        case LaunchArg::Kind::In:
          c.kind = CodegenArg::Kind::Tensor;
          c.tensor = &slots_[ins.in[a.index]];
          break;
        case LaunchArg::Kind::Out:
          c.kind = CodegenArg::Kind::Tensor;
          c.tensor = &slots_[ins.out[a.index]];
          break;
        case LaunchArg::Kind::Int64:
          c.kind = CodegenArg::Kind::Int64;
          c.i64 = a.i64;
          break;
        case LaunchArg::Kind::Float64:
          c.kind = CodegenArg::Kind::Float64;
          c.f64 = a.f64;
          break;
      }
      launch_args.push_back(c);
    }
    launch_args_.push_back(std::move(launch_args));
  }
  staging_.resize(instrs_.size());  // filled by a fallback's first run
}

HWP_Buffer Executor::KeptWorkspaces::workspace(int k, uint64_t nbytes) {
  if (static_cast<size_t>(k) >= held_.size()) held_.resize(k + 1);
  std::shared_ptr<Storage>& ws = held_[k];
  if (!ws || ws->nbytes() < nbytes) {
    ws.reset();  // back to the allocator's cache before the larger one is taken
    ws = Storage::allocate(device_, nbytes, /*segment_start=*/true);
  }
  ws->record_stream(device_->current_stream());  // the stream may change between runs
  return ws->buffer();
}

bool Executor::KeptWorkspaces::take_refused(const std::string& why) {
  if (fallback_mode() == FallbackMode::Error) return false;
  refused = why;
  return true;
}

// A kernel that only takes contiguous inputs gets a view input copied, as run_kernel would do
// on every call, but into planned memory (no allocation per run).
void Executor::add_contiguous_copies() {
  std::vector<Instr> out;
  out.reserve(instrs_.size());
  std::vector<size_t> start(instrs_.size() + 1);  // an instruction's new index (its copies')
  for (size_t k = 0; k < instrs_.size(); ++k) {
    Instr& ins = instrs_[k];
    start[k] = out.size();
    // a compiled kernel and a collective read contiguous inputs
    const bool launch = ins.kind == Kind::Launch || ins.kind == Kind::Ccl;
    if ((ins.kind == Kind::Kernel && ins.op != core_ops().copy && !ins.skip) || launch) {
      const KernelEntry* entry =
          launch ? nullptr : device_->plugin->kernels.find(ins.op, ins.dtype);
      for (int& s : ins.in) {
        if ((!launch && (!entry || entry->accepts_strided())) ||
            contiguous_layout(meta_[s].shape, slots_[s].strides))
          continue;
        Instr copy;
        copy.kernel = "copy";
        copy.op = core_ops().copy;
        copy.dtype = meta_[s].dtype;
        copy.in = {s};
        const int fresh = static_cast<int>(meta_.size());
        meta_.push_back(meta_[s]);
        Tensor t;
        t.shape = meta_[s].shape;
        t.dtype = meta_[s].dtype;
        t.strides = contiguous_strides(t.shape);
        slots_.push_back(t);
        is_view_.push_back(false);
        is_fed_.push_back(false);
        is_bound_.push_back(false);
        root_.push_back(fresh);
        copy.out = {fresh};
        copy.skip = numel(t.shape) == 0;
        out.push_back(std::move(copy));
        s = fresh;
      }
    }
    out.push_back(std::move(ins));
  }
  start[instrs_.size()] = out.size();
  moved_.resize(instrs_.size());
  for (size_t k = 0; k < instrs_.size(); ++k) moved_[k] = start[k + 1] - 1;  // after its copies
  for (Instr& ins : out)
    if (ins.kind == Kind::If || ins.kind == Kind::While) {
      ins.mid = start[ins.mid];
      ins.end = start[ins.end];
    }
  instrs_ = std::move(out);
}

void Executor::plan_memory() {
  const size_t n = meta_.size(), none = static_cast<size_t>(-1);
  std::vector<size_t> first(n, none), last(n, 0);
  auto use = [&](int s, size_t at) { last[root_[s]] = std::max(last[root_[s]], at); };
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& ins = instrs_[i];
    for (int s : ins.in) use(s, i);
    if (ins.kind == Kind::View) continue;
    for (const auto* v : {&ins.out, &ins.args})
      for (int s : *v) {
        if (first[s] != none)
          raise(ErrorKind::Value, "Executor: value slot " + std::to_string(s) + " is defined twice");
        first[s] = i;
        last[s] = std::max(last[s], i);
      }
  }
  // Regions: results and a loop's block arguments are written until the region's end, and
  // yields read there; a loop's body runs again, so what it reads that was defined before the
  // loop lives to the loop's end.
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& ins = instrs_[i];
    if (ins.kind != Kind::If && ins.kind != Kind::While) continue;
    for (const auto* v : {&ins.out, &ins.args, &ins.yields, &ins.else_yields})
      for (int s : *v) use(s, ins.end);
    if (ins.kind != Kind::While) continue;
    for (size_t j = i + 1; j < ins.end; ++j)
      for (const auto* v : {&instrs_[j].in, &instrs_[j].yields, &instrs_[j].else_yields})
        for (int s : *v) {
          const int r = root_[s];
          if (first[r] != none && first[r] <= i) last[r] = std::max(last[r], ins.end);
        }
  }
  // Program outputs live to the end of the run (they are in the arena too: the next run takes a
  // fresh arena while the caller holds one of them).
  for (int s : outputs_) last[root_[s]] = instrs_.size();
  std::vector<bool> donated(n, false);
  auto planned = [&](int s) {
    return first[s] != none && !is_view_[s] && !is_fed_[s] && !is_bound_[s] && !donated[s];
  };
  // Writes (see the constructor): held to the end of the run; computed in the bound tensor's
  // memory where no later instruction reads the old value (and the one making it reads it, if
  // at all, as an elementwise kernel reads its own operand). Not inside a region.
  const bool regions = std::any_of(instrs_.begin(), instrs_.end(), [](const Instr& ins) {
    return ins.kind == Kind::If || ins.kind == Kind::While;
  });
  donated_.assign(writes_.size(), false);
  std::vector<int>& group = group_;
  group.resize(n);
  for (size_t s = 0; s < n; ++s) group[s] = static_cast<int>(s);
  num_in_place_ = 0;
  for (const auto& wr : writes_) last[root_[wr.first]] = instrs_.size();
  auto is_output = [&](int s) {
    return std::find(outputs_.begin(), outputs_.end(), s) != outputs_.end();
  };
  auto read_after = [&](int b, size_t k) {  // the bound slot b (or a view of it) read past k
    for (size_t i = k + 1; i < instrs_.size(); ++i)
      for (int s : instrs_[i].in)
        if (root_[s] == b) return true;
    return false;
  };
  auto sole_operand = [&](const Instr& ins, int s) {  // s is ins's only operand over its bytes
    int seen = 0;
    for (int t : ins.in) seen += root_[t] == root_[s];
    return seen == 1 && root_[s] == s;
  };
  // An optimizer update's outputs over their own inputs, all or none (its kernel contract):
  // each is a write into the bound input it replaces, or takes the bytes of an arena input
  // that dies there.
  for (size_t i = 0; i < instrs_.size() && !regions; ++i) {
    const Instr& ins = instrs_[i];
    if (ins.kind != Kind::Kernel || ins.own_inputs.empty() || ins.skip || ins.fallback) continue;
    std::vector<int> via(ins.out.size(), -1);  // the write each output is, or -1: in place
    bool all = true;
    for (size_t j = 0; j < ins.out.size() && all; ++j) {
      const int o = ins.out[j], s = ins.in[ins.own_inputs[j]];
      all = planned(o) && !is_output(o) && meta_[o].shape == meta_[s].shape &&
            meta_[o].dtype == meta_[s].dtype && sole_operand(ins, s);
      if (!all) break;
      for (size_t w = 0; w < writes_.size(); ++w)
        if (writes_[w].first == o && writes_[w].second == s && !read_after(s, i))
          via[j] = static_cast<int>(w);
      if (via[j] < 0) all = planned(s) && last[s] == i && !is_output(s);
    }
    if (!all) continue;
    for (size_t j = 0; j < ins.out.size(); ++j) {
      const int o = ins.out[j], s = ins.in[ins.own_inputs[j]];
      if (via[j] >= 0) {
        donated_[via[j]] = true;
        donated[o] = true;
      } else {
        group[o] = group[s];
        last[group[o]] = std::max(last[group[o]], last[o]);
      }
      ++num_in_place_;
    }
  }
  for (size_t w = 0; w < writes_.size(); ++w) {
    const auto [v, b] = writes_[w];
    if (regions || !planned(v) || donated[v] || is_output(v)) continue;
    const size_t k = first[v];
    const Instr& made = instrs_[k];
    if ((made.kind != Kind::Kernel && made.kind != Kind::Launch) || made.skip || made.fallback ||
        !made.own_inputs.empty())
      continue;
    bool ok = true;
    for (size_t i = k; i < instrs_.size() && ok; ++i)
      for (int s : instrs_[i].in)
        if (root_[s] == b && (i > k || !made.elementwise || s != b)) ok = false;
    for (const auto& [v2, b2] : writes_) ok = ok && (b2 != b || v2 == v);
    if (!ok) continue;
    donated_[w] = true;
    donated[v] = true;
  }
  // In place: an elementwise kernel's result shares the bytes of an input that is an arena
  // value (not a view: the same layout, contiguous) of its shape and dtype and whose last use
  // is this kernel. `group[s]`: the slot whose placement holds s; its lifetime grows to cover
  // every member (each one is born where the one before it dies).
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& ins = instrs_[i];
    if (ins.kind != Kind::Kernel || !ins.elementwise || ins.skip) continue;
    std::vector<int> taken;
    for (int o : ins.out) {
      if (!planned(o)) continue;
      for (int s : ins.in) {
        if (!planned(s) || last[s] != i || meta_[s].shape != meta_[o].shape ||
            meta_[s].dtype != meta_[o].dtype ||
            std::find(taken.begin(), taken.end(), s) != taken.end())
          continue;
        // another operand viewing s's bytes differently (a broadcast of s) must not see them
        // overwritten
        bool viewed = false;
        for (int t : ins.in) viewed |= t != s && root_[t] == s;
        if (viewed) continue;
        taken.push_back(s);
        group[o] = group[s];
        last[group[o]] = std::max(last[group[o]], last[o]);
        ++num_in_place_;
        break;
      }
    }
  }
  std::vector<Placement> items;
  for (size_t s = 0; s < n; ++s) {
    if (!planned(static_cast<int>(s)) || group[s] != static_cast<int>(s)) continue;
    const uint64_t nbytes = tensor_nbytes(meta_[s].shape, meta_[s].dtype, "Executor");
    items.push_back({static_cast<int>(s), aligned(nbytes), first[s], last[s]});
  }
  arena_bytes_ = place_greedy(items);
  if (arena_bytes_ > 0) arena_ = Storage::allocate(device_, arena_bytes_);
  std::vector<uint64_t> offset(n, 0);
  for (const Placement& p : items) offset[p.slot] = p.offset;
  for (size_t w = 0; w < writes_.size(); ++w) {
    if (!donated_[w]) continue;
    const auto [v, b] = writes_[w];
    slots_[v].storage = slots_[b].storage;
    slots_[v].offset = slots_[b].offset;
  }
  for (size_t s = 0; s < n; ++s) {
    if (!planned(static_cast<int>(s))) continue;
    slots_[s].storage = arena_;
    slots_[s].offset = static_cast<int64_t>(offset[group[s]] / itemsize(meta_[s].dtype));
    arena_slots_.push_back(static_cast<int>(s));
  }
  arena_uses_ = arena_.use_count();
}

// The CPU fallback as run_kernel's (the same copies and kernel, counted the same), into
// staging tensors kept across runs. `refused`: the device's kernel refused this call (the
// launch already happened; HWPORT_FALLBACK=error raised there).
void Executor::run_fallback(size_t i, bool refused) {
  const Instr& ins = instrs_[i];
  if (!refused && fallback_mode() == FallbackMode::Error) {  // run_kernel raises eager's error
    run_kernel(ins.op, ins.dtype, device_, in_ptrs_[i].data(), static_cast<int>(ins.in.size()),
               out_ptrs_[i].data(), static_cast<int>(ins.out.size()), ins.attrs, &workspaces_);
    return;
  }
  count_fallback(ins.op, device_, ins.dtype);
  Staging& st = staging_[i];
  if (st.in_ptrs.size() != ins.in.size() || st.out_ptrs.size() != ins.out.size()) {
    if (!cpu_) {
      cpu_ = DeviceManager::instance().cpu();
      cpu_workspaces_ = std::make_unique<KeptWorkspaces>(cpu_);
    }
    st.in.assign(ins.in.size(), Tensor{});
    st.out.assign(ins.out.size(), Tensor{});
    st.in_ptrs.clear();
    st.out_ptrs.clear();
    for (Tensor& t : st.in) st.in_ptrs.push_back(&t);
    for (Tensor& t : st.out) st.out_ptrs.push_back(&t);
  }
  const Plugin& dev = *device_->plugin;
  const Plugin& cpu = *cpu_->plugin;
  auto stage = [this](Tensor& t, uint64_t nbytes) {
    if (!t.storage || t.storage->nbytes() < nbytes) {
      t.storage.reset();
      t.storage = Storage::allocate(cpu_, nbytes);
    }
    if (host_.size() < nbytes) host_.resize(nbytes);
  };
  for (size_t k = 0; k < ins.in.size(); ++k) {
    const Tensor& src = slots_[ins.in[k]];
    uint64_t lo = 0, hi = 0;
    src.byte_span(&lo, &hi);
    Tensor& t = st.in[k];
    stage(t, hi - lo);
    t.shape = src.shape;
    t.strides = src.strides;
    t.dtype = src.dtype;
    t.offset = static_cast<int64_t>((src.byte_offset() - lo) / itemsize(src.dtype));
    if (hi == lo) continue;
    dev.check(dev.memory.copy_d2h(device_->index, host_.data(), src.storage->buffer(), lo,
                                  hi - lo),
              "copy_d2h");
    cpu.check(cpu.memory.copy_h2d(cpu_->index, t.storage->buffer(), t.storage->base_offset(),
                                  host_.data(), hi - lo),
              "copy_h2d");
  }
  for (size_t k = 0; k < ins.out.size(); ++k) {
    const Tensor& dst = slots_[ins.out[k]];
    Tensor& t = st.out[k];
    stage(t, tensor_nbytes(dst.shape, dst.dtype, ins.kernel));
    t.shape = dst.shape;
    t.strides = dst.strides;
    t.dtype = dst.dtype;
    t.offset = 0;
  }
  run_kernel(ins.op, ins.dtype, cpu_, st.in_ptrs.data(), static_cast<int>(ins.in.size()),
             st.out_ptrs.data(), static_cast<int>(ins.out.size()), ins.attrs,
             cpu_workspaces_.get());
  for (size_t k = 0; k < ins.out.size(); ++k) {
    const Tensor& t = st.out[k];
    Tensor& dst = slots_[ins.out[k]];
    const uint64_t nbytes = tensor_nbytes(dst.shape, dst.dtype, ins.kernel);
    if (nbytes == 0) continue;
    cpu.check(cpu.memory.copy_d2h(cpu_->index, host_.data(), t.storage->buffer(),
                                  t.byte_offset(), nbytes),
              "copy_d2h");
    dev.check(dev.memory.copy_h2d(device_->index, dst.storage->buffer(), dst.byte_offset(),
                                  host_.data(), nbytes),
              "copy_h2d");
  }
}

std::string Executor::where(size_t i) const {
  const Instr& ins = instrs_[i];
  return "Executor.run: instruction " + std::to_string(i) + " (" +
         (ins.kind == Kind::View    ? std::string("view")
          : ins.kind == Kind::If    ? std::string("if")
          : ins.kind == Kind::While  ? std::string("while")
          : ins.kind == Kind::Launch ? "launch " + ins.kernel
                                     : ins.kernel + " " + dtype_name(ins.dtype)) +
         "): ";
}

bool Executor::read_condition(int slot, size_t i) {
  const Tensor& t = slots_[slot];
  if (t.dtype != DType::Bool || numel(t.shape) != 1)
    raise(ErrorKind::Value, where(i) + "the condition must be a bool tensor of one element, got " +
                                shape_str(t.shape) + " " + dtype_name(t.dtype));
  uint8_t value = 0;
  const Plugin& p = *device_->plugin;
  p.check(p.memory.copy_d2h(device_->index, &value, t.storage->buffer(), t.byte_offset(), 1),
          "copy_d2h");
  return value != 0;
}

// to[k] = from[k + skip_from] for every k (a copy kernel: the same one eager's copies run).
void Executor::copy_slots(const std::vector<int>& from, const std::vector<int>& to,
                          size_t skip_from) {
  static const Attrs kNone;
  for (size_t k = 0; k < to.size(); ++k) {
    const int a = from[k + skip_from], b = to[k];
    if (a == b || numel(meta_[b].shape) == 0) continue;
    const Tensor* in = &slots_[a];
    Tensor* out = &slots_[b];
    run_kernel(core_ops().copy, meta_[b].dtype, device_, &in, 1, &out, 1, kNone, &workspaces_);
  }
}

void Executor::run_collective(const Instr& ins) {
  static const Tensor none;
  const Tensor& in = ins.in.empty() ? none : slots_[ins.in[0]];
  const Tensor& out = ins.out.empty() ? none : slots_[ins.out[0]];
  CclComm& c = *ins.comm;
  switch (ins.ccl) {
    case CclCall::AllReduce: c.all_reduce(in, out, ins.reduce_op); break;
    case CclCall::Broadcast: c.broadcast(in, out, ins.peer); break;
    case CclCall::Reduce: c.reduce(in, out, ins.reduce_op, ins.peer); break;
    case CclCall::AllGather: c.all_gather(in, out); break;
    case CclCall::ReduceScatter: c.reduce_scatter(in, out, ins.reduce_op); break;
    case CclCall::AllToAll: c.all_to_all(in, out); break;
    case CclCall::Send: c.send(in, ins.peer); break;
    case CclCall::Recv: c.recv(out, ins.peer); break;
  }
}

void Executor::run_range(size_t begin, size_t end) {
  for (size_t i = begin; i < end;) {
    const Instr& ins = instrs_[i];
    if (ins.kind == Kind::If) {
      if (read_condition(ins.in[0], i)) {
        run_range(i + 1, ins.mid);
        copy_slots(ins.yields, ins.out, 0);
      } else {
        run_range(ins.mid, ins.end);
        copy_slots(ins.else_yields, ins.out, 0);
      }
      i = ins.end;
      continue;
    }
    if (ins.kind == Kind::While) {
      copy_slots(ins.in, ins.out, 1);  // zero iterations: the results are the inits
      bool again = read_condition(ins.in[0], i);
      while (again) {
        copy_slots(ins.out, ins.args, 0);
        run_range(i + 1, ins.end);
        copy_slots(ins.yields, ins.out, 1);
        again = read_condition(ins.yields[0], i);
      }
      i = ins.end;
      continue;
    }
    if (ins.kind == Kind::View) {
      Tensor& out = slots_[ins.out[0]];
      out.storage = slots_[ins.in[0]].storage;
      out.shape = ins.shape;
      out.offset = slots_[ins.in[0]].offset + ins.offset;  // a root may sit inside the arena
      ++i;
      continue;
    }
    if (ins.skip) {
      ++i;
      continue;
    }
    if (ins.kind == Kind::Ccl) {
      try {
        run_collective(ins);
      } catch (const Error& e) {
        raise(e.kind(), where(i) + e.what());
      }
      ++i;
      continue;
    }
    if (ins.kind == Kind::Launch) {
      try {
        ins.function->launch(ins.grid, ins.group, launch_args_[i]);
      } catch (const Error& e) {
        raise(e.kind(), where(i) + e.what());
      }
      ++i;
      continue;
    }
    try {
      if (ins.fallback) {
        // a device with a codegen target compiles the op, as eager does; else the CPU
        if (!run_compiled(ins.op, ins.dtype, device_, in_ptrs_[i].data(),
                          static_cast<int>(ins.in.size()), out_ptrs_[i].data(),
                          static_cast<int>(ins.out.size()), ins.attrs))
          run_fallback(i, false);
      } else {
        run_kernel(ins.op, ins.dtype, device_, in_ptrs_[i].data(),
                   static_cast<int>(ins.in.size()), out_ptrs_[i].data(),
                   static_cast<int>(ins.out.size()), ins.attrs, &workspaces_);
        if (!workspaces_.refused.empty()) {  // the kernel refused the call: eager falls back
          workspaces_.refused.clear();
          if (!run_compiled(ins.op, ins.dtype, device_, in_ptrs_[i].data(),
                            static_cast<int>(ins.in.size()), out_ptrs_[i].data(),
                            static_cast<int>(ins.out.size()), ins.attrs))
            run_fallback(i, true);
        }
      }
    } catch (const Error& e) {
      raise(e.kind(), where(i) + e.what());
    }
    ++i;
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& feeds) {
  if (feeds.size() != feeds_.size())
    raise(ErrorKind::Value, "Executor.run: expected " + std::to_string(feeds_.size()) +
                                " feed(s), got " + std::to_string(feeds.size()));
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [name, s] = feeds_[i];
    const Tensor& t = feeds[i];
    if (t.device() != device_ || t.dtype != meta_[s].dtype || t.shape != meta_[s].shape)
      raise(ErrorKind::Value, "Executor.run: feed '" + name + "' expected shape " +
                                  shape_str(meta_[s].shape) + " " + dtype_name(meta_[s].dtype) +
                                  " on " + device_->name + ", got shape " + shape_str(t.shape) +
                                  " " + dtype_name(t.dtype) + " on " + t.device()->name);
    slots_[s] = t.is_contiguous() ? t : contiguous(t);
  }
  // Outputs of an earlier run that the caller still holds view the arena: it is theirs now.
  if (arena_ && arena_.use_count() > arena_uses_) {
    arena_ = Storage::allocate(device_, arena_bytes_);
    for (int s : arena_slots_) slots_[s].storage = arena_;
  }
  run_range(0, instrs_.size());
  for (size_t w = 0; w < writes_.size(); ++w) {
    const auto [v, b] = writes_[w];
    Tensor& target = slots_[b];
    if (!donated_[w] && numel(target.shape) > 0) {
      const Tensor* in[] = {&slots_[v]};
      Tensor* outs[] = {&target};
      run_kernel(core_ops().copy, target.dtype, device_, in, 1, outs, 1, Attrs{});
    }
    target.storage->bump_version();  // as Tensor.set_value: saved tensors see the write
  }
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (int s : outputs_) out.push_back(slots_[s]);
  // Drop the run's references to the feeds and to views, so that outputs the caller releases
  // come back to this executor.
  for (size_t s = 0; s < slots_.size(); ++s)
    if (is_fed_[s] || is_view_[s]) slots_[s].storage.reset();
  return out;
}

std::string Executor::describe() const {
  std::ostringstream os;
  auto slots = [&os](const std::vector<int>& v) {
    for (size_t k = 0; k < v.size(); ++k) os << (k ? ", %" : "%") << v[k];
  };
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& ins = instrs_[i];
    slots(ins.out);
    if (ins.kind == Kind::If) {
      os << " = if(%" << ins.in[0] << ") then [" << i + 1 << ", " << ins.mid << ") yield (";
      slots(ins.yields);
      os << ") else [" << ins.mid << ", " << ins.end << ") yield (";
      slots(ins.else_yields);
      os << ")\n";
      continue;
    }
    if (ins.kind == Kind::While) {
      os << " = while(";
      slots(ins.in);
      os << ") args (";
      slots(ins.args);
      os << ") body [" << i + 1 << ", " << ins.end << ") yield (";
      slots(ins.yields);
      os << ")\n";
      continue;
    }
    if (ins.kind == Kind::Launch) {
      os << " = launch " << ins.kernel << "(";
      slots(ins.in);
      os << ") grid [" << ins.grid[0] << ", " << ins.grid[1] << ", " << ins.grid[2]
         << "] group [" << ins.group[0] << ", " << ins.group[1] << ", " << ins.group[2] << "]\n";
      continue;
    }
    if (ins.kind == Kind::Ccl) {
      static const char* const names[] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                          "reduce_scatter", "all_to_all", "send", "recv"};
      os << (ins.out.empty() ? "" : " = ") << "ccl " << names[static_cast<int>(ins.ccl)] << "(";
      slots(ins.in);
      os << ") rank " << ins.comm->rank() << " of " << ins.comm->nranks() << "\n";
      continue;
    }
    if (ins.kind == Kind::View) {
      os << " = view(%" << ins.in[0] << ") " << shape_str(ins.shape) << " strides "
         << shape_str(ins.strides) << " offset " << ins.offset << "\n";
      continue;
    }
    os << " = " << ins.kernel << "<" << dtype_name(ins.dtype) << ">(";
    slots(ins.in);
    os << ")" << (ins.skip ? " skipped (empty)" : "") << (ins.fallback ? " cpu fallback" : "");
    for (int s : ins.out)
      if (group_[s] != s) os << " in place of %" << group_[s];
    os << "\n";
  }
  return os.str();
}

void Executor::set_kernel_attrs(size_t index, Attrs attrs) {
  if (index >= moved_.size() || instrs_[moved_[index]].kind != Kind::Kernel)
    raise(ErrorKind::Value, "Executor.set_kernel_attrs: instruction " + std::to_string(index) +
                                " is not a kernel");
  instrs_[moved_[index]].attrs = std::move(attrs);
}

}  // namespace hwport
