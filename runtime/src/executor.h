// The program executor (DESIGN.md, "PIR, to_static, inference"): runs a kernel-dialect program
// (pir/passes/lower_to_kernel.py) as a flat instruction list. Built once: every kernel's op id
// resolved in the kernel registry, its attributes packed, inputs that a kernel without
// HWP_KERNEL_ACCEPTS_STRIDED cannot take as views given a planned contiguous copy, and every
// value placed by liveness into one arena (values whose lifetimes do not overlap share bytes;
// an elementwise kernel's result takes the bytes of an input of its size, dtype and layout
// that dies at it: in place; the program's outputs live to the end of the run and are
// returned as views of it). Kernel workspaces and the CPU fallback's staging copies are kept
// across runs, also for a kernel that refuses a call at launch (HWP_ERROR_NOT_SUPPORTED: the
// staging is made at the first refusal). A run makes no allocator call (after the first, which sizes the workspaces)
// unless the caller still holds an output of an earlier run: then the run takes a fresh
// arena, so that output is never overwritten. Views (reshape, transpose, broadcast, slice as
// eager makes them) are metadata instructions. cf.if / cf.while are instructions over ranges
// of the list (their regions, inline after them): the condition is read from a bool tensor of
// one element, yielded values are copied into the results (a loop's carried values into its
// block arguments before each iteration), and liveness keeps a value read inside a loop but
// defined before it alive for the whole loop. A launch runs a compiled kernel (codegen.h) with
// a fixed grid and group over value slots: its outputs are planned like a kernel's (fresh,
// contiguous, never over an input), its inputs given contiguous (a view is copied first).
// A collective (pir dialect `dist`, from a captured distributed step) runs a communicator's
// call (ccl.h) on the device's current stream, in program order, over slots planned the same
// way: contiguous inputs, fresh outputs; a send has no output and a recv no input.
#pragma once

#include <algorithm>

#include <memory>
#include <string>
#include <vector>

#include "ccl.h"
#include "codegen.h"
#include "dispatch.h"
#include "tensor.h"

namespace hwport {

class Executor {
 public:
  enum class Kind { Kernel, View, If, While, Launch, Ccl };
  // A collective's call (Kind::Ccl).
  enum class CclCall { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AllToAll,
                       Send, Recv };
  // A launch's argument: in[index] or out[index] (the tensor's buffer and byte offset), or a
  // constant.
  struct LaunchArg {
    enum class Kind { In, Out, Int64, Float64 };
    Kind kind = Kind::In;
    int index = 0;
    int64_t i64 = 0;
    double f64 = 0.0;
  };
  struct Instr {
    Kind kind = Kind::Kernel;
    std::string kernel;  // the registry name launched (diagnostics)
    int op = -1;         // registry id
    DType dtype = DType::Float32;
    std::vector<int> in, out;  // value slots
    Attrs attrs;
    bool skip = false;  // an empty output: eager launches nothing either
    bool elementwise = false;  // out[i] depends on in[i] only: a result may overwrite an input
    // An optimizer update: out[j] may be written over in[own_inputs[j]], all at once or none
    // (its kernel contract); empty for other kernels.
    std::vector<int> own_inputs;
    bool fallback = false;     // no kernel on the device: compiled (eager JIT) if the
                               // device has a codegen target, else the CPU fallback, staged
    Shape shape, strides;  // View: the view's layout over its input's storage
    int64_t offset = 0;
    // If: in = {cond}, out = results; the then-region is [i + 1, mid), the else-region
    // [mid, end); they yield `yields` / `else_yields`. While: in = {cond, inits...}, out =
    // results, `args` the body's block arguments, the body [i + 1, end) yields {next cond,
    // next carried...}. mid and end: instruction indices.
    std::vector<int> args, yields, else_yields;
    size_t mid = 0, end = 0;
    // Launch: `function` on a fixed grid and group, its arguments in order.
    std::shared_ptr<CodegenFunction> function;
    uint32_t grid[3] = {1, 1, 1}, group[3] = {1, 1, 1};
    std::vector<LaunchArg> launch_args;
    // Ccl: `comm`'s `call` with its reduce op and root / peer.
    std::shared_ptr<CclComm> comm;
    CclCall ccl = CclCall::AllReduce;
    int32_t reduce_op = 0, peer = 0;
  };
  struct SlotMeta {
    Shape shape;
    DType dtype = DType::Float32;
  };

  // `feeds`: (name, slot) of the program's data inputs; `bound`: (slot, tensor) for parameters
  // and constants (made contiguous once); `outputs`: the slots returned by run().
  // `writes`: (value slot, bound slot) pairs: after a run the bound tensor holds the value
  // (to_static: a parameter or an optimizer state a training step updates). The value is
  // computed straight into the bound tensor's memory where the kernel making it is the last
  // reader of the old value (or reads it as an elementwise kernel reads its own input);
  // otherwise it is copied there after the run.
  Executor(Device* device, std::vector<SlotMeta> slots,
           std::vector<std::pair<std::string, int>> feeds,
           std::vector<std::pair<int, Tensor>> bound, std::vector<Instr> instrs,
           std::vector<int> outputs, std::vector<std::pair<int, int>> writes = {});

  // Feeds in `feeds` order (checked against the program's shapes and dtypes).
  std::vector<Tensor> run(const std::vector<Tensor>& feeds);

  const std::vector<std::pair<std::string, int>>& feeds() const { return feeds_; }
  size_t num_instructions() const { return instrs_.size(); }
  // A kernel instruction's attributes replaced between runs (to_static: an optimizer's
  // per-step scalars); the index is the instruction's, as given to the constructor.
  void set_kernel_attrs(size_t index, Attrs attrs);
  uint64_t arena_bytes() const { return arena_bytes_; }
  size_t num_in_place() const { return num_in_place_; }  // results written over an input
  size_t num_written_in_place() const {  // writes computed straight into their tensor
    return static_cast<size_t>(std::count(donated_.begin(), donated_.end(), true));
  }
  std::string describe() const;  // the instruction list, one line each

 private:
  // Workspaces kept across runs: a launch's k-th request gets the k-th buffer, grown when a
  // request is larger (launches run in order on one stream, so they can share them).
  class KeptWorkspaces : public WorkspaceSource {
   public:
    explicit KeptWorkspaces(Device* device) : device_(device) {}
    HWP_Buffer workspace(int k, uint64_t nbytes) override;
    // A kernel refusing a call at launch: the executor runs the fallback into its staging
    // buffers (unless HWPORT_FALLBACK=error: then run_kernel raises eager's error).
    bool take_refused(const std::string& why) override;
    std::string refused;  // the last refusal's message, cleared by the executor

   private:
    Device* device_;
    std::vector<std::shared_ptr<Storage>> held_;
  };
  // The CPU copies of a fallback instruction's operands, kept across runs.
  struct Staging {
    std::vector<Tensor> in, out;
    std::vector<const Tensor*> in_ptrs;
    std::vector<Tensor*> out_ptrs;
  };

  void add_contiguous_copies();
  void plan_memory();
  void run_fallback(size_t i, bool refused);
  void run_range(size_t begin, size_t end);
  void run_collective(const Instr& ins);
  bool read_condition(int slot, size_t i);
  void copy_slots(const std::vector<int>& from, const std::vector<int>& to, size_t skip_from);
  std::string where(size_t i) const;

  Device* device_;
  std::vector<SlotMeta> meta_;
  std::vector<Tensor> slots_;
  std::vector<std::pair<std::string, int>> feeds_;
  std::vector<int> outputs_;
  std::vector<Instr> instrs_;
  std::vector<std::vector<const Tensor*>> in_ptrs_;
  std::vector<std::vector<Tensor*>> out_ptrs_;
  std::vector<std::vector<CodegenArg>> launch_args_;  // per instruction (Launch only)
  std::vector<bool> is_view_, is_fed_, is_bound_;
  std::vector<int> root_;  // the slot owning a view's storage (itself for others)
  std::shared_ptr<Storage> arena_;
  uint64_t arena_bytes_ = 0;
  std::vector<int> arena_slots_;  // the slots whose memory is in the arena
  long arena_uses_ = 0;            // the arena's use count when no caller holds an output
  size_t num_in_place_ = 0;
  std::vector<int> group_;  // the slot whose planned bytes a slot shares (itself if none)
  std::vector<size_t> moved_;  // a given instruction's index after add_contiguous_copies
  std::vector<std::pair<int, int>> writes_;  // (value slot, bound slot)
  std::vector<bool> donated_;                // per write: computed in the bound memory
  KeptWorkspaces workspaces_;
  Device* cpu_ = nullptr;  // where fallbacks run
  std::unique_ptr<KeptWorkspaces> cpu_workspaces_;
  std::vector<Staging> staging_;  // per instruction (empty unless a fallback)
  std::vector<uint8_t> host_;     // the host hop of fallback copies
};

}  // namespace hwport
