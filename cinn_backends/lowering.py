"""The compiler's lowering of a cinn.group into the kernel dialect (installed into
pir/passes/lower_to_kernel.py's GROUP_LOWERING): the group's region is lowered to loop IR and
rendered for the place's codegen target (lower_group.py), compiled (compile.py, cached), and
each of its launches becomes a kernel.codegen_launch op the executor runs.

The group's operands are made contiguous first (a broadcast or transposed view is copied, as
a kernel without strided support gets it); its results are fresh contiguous values. When the
place has no codegen target or the compiler is off (HWPORT_CINN=0) the group's ops are lowered
one by one; a group that fails to lower or compile, or runs past the compile budget, is
lowered one by one too, with a warning that names the group and the reason (once per group
and reason in a process)."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from hwport.pir.core import Operation, Value
from hwport.pir.types import TensorType

from . import compile as cinn_compile

_log = logging.getLogger("hwport.cinn")
_warned: set[str] = set()
# (function, grid, group, arguments) -> its pir.codegen_functions id; the functions are kept
# alive by the module cache, so id() stays unique while the entry exists
_launch_ids: dict[tuple, int] = {}


def _warn_once(message: str) -> None:
    cinn_compile._count("fallbacks")
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)


def describe_group(op: Operation) -> str:
    body = op.regions[0].blocks[0]
    names = [o.name.removeprefix("pd_op.") for o in body.ops[:-1]]
    return f"cinn.group {op.attr('group_id')} ({', '.join(names)})"


def _prefetch_block(lw: Any, op: Operation, target: Any) -> None:
    """At the first group of a block: lowers every group of the block and starts their
    compiles, so they overlap (a model's groups compile in parallel, not one after another).
    The lowered groups wait on the Lowering `lw` (this lowering's state) for their turn."""
    state = lw.__dict__.setdefault("_cinn", {"blocks": set(), "lowered": {}})
    block = op.parent
    if block is None or id(block) in state["blocks"]:
        return
    state["blocks"].add(id(block))
    for other in [op] + [o for o in block.ops if o.name == "cinn.group" and o is not op]:
        try:
            lowered = _tuned(lw.place, other, target, None, search_now=False)
        except Exception:  # noqa: BLE001 (its own lowering reports it)
            continue
        state["lowered"][other] = lowered
        cinn_compile.prefetch(lw.place, lowered.dialect, lowered.source, lowered.options)


def _take_lowered(lw: Any, op: Operation) -> Any:
    return lw.__dict__.get("_cinn", {"lowered": {}})["lowered"].pop(op, None)


def lower_group_for_target(op: Operation, target: Any, tuning: Any = None) -> Any:
    """The group's region lowered and rendered for `target` (a LoweredGroup), scheduled with
    `tuning` (tuning.py; None: the rule)."""
    from .lower_group import lower_group
    from .tuning import RULE

    inner = list(op.regions[0].blocks[0].ops)
    return lower_group(inner[:-1], list(op.regions[0].blocks[0].args),
                       list(inner[-1].operands), target, tuning=tuning or RULE)


def _tuned(place: Any, op: Operation, target: Any, rule: Any, search_now: bool) -> Any:
    """The group lowered with its autotuned schedule (autotune.py) for its static shapes: a
    winner cached for them, else (search_now) one measured now; the rule without shapes."""
    from . import autotune
    from .tuning import RULE

    shapes = {("in", i): tuple(v.type.shape) for i, v in enumerate(op.operands)}
    shapes.update({("out", j): tuple(r.type.shape) for j, r in enumerate(op.results)})
    if rule is not None and rule.tuning != RULE:
        return rule  # the prefetch found its winner
    if any(not isinstance(d, int) or d < 0 for s in shapes.values() for d in s):
        return rule or lower_group_for_target(op, target)
    return autotune.tuned(place, lambda t: lower_group_for_target(op, target, t), shapes,
                          rule, search_now=search_now)


def lower_cinn_group(lw: Any, op: Operation, mapped: dict[Value, Any]) -> bool:
    """lower_to_kernel's hook: True when the group became generated kernels."""
    if not cinn_compile.enabled():
        return False
    info = cinn_compile.target_info(lw.place)
    if info is None:
        return False
    from .target import TargetInfo

    target = TargetInfo.from_dict(info)
    _prefetch_block(lw, op, target)
    try:
        lowered = _tuned(lw.place, op, target, _take_lowered(lw, op), search_now=True)
        module = cinn_compile.compile_source(lw.place, lowered.dialect, lowered.source,
                                             lowered.options)
    except Exception as exc:  # noqa: BLE001 (any failure: the ops run unfused)
        _warn_once(f"{describe_group(op)} on {lw.place}: not compiled, its ops run unfused "
                   f"({type(exc).__name__}: {_first_lines(str(exc))})")
        return False
    ins = [lw.contiguous("cinn.group", mapped[v]) for v in op.operands]
    in_shapes = [tuple(v.type.shape) for v in ins]
    out_types = [r.type for r in op.results]
    launches = lowered.launches({**{("in", i): s for i, s in enumerate(in_shapes)},
                                 **{("out", j): tuple(t.shape)
                                    for j, t in enumerate(out_types)}})
    outs: dict[int, Value] = {}
    for launch in launches:
        fn = module.function(launch.kernel)
        outs.update(_emit_launch(lw, fn, launch, ins, outs, out_types))
    for j, r in enumerate(op.results):
        mapped[r] = lw.root(outs[j])
    return True


def _emit_launch(lw: Any, fn: Any, launch: Any, ins: list[Value], outs: dict[int, Value],
                 out_types: list[TensorType]) -> dict[int, Value]:
    """One kernel.codegen_launch: operands are the inputs it reads (group inputs and results
    an earlier launch wrote), results the group outputs it writes."""
    from hwport.pir import codegen_functions

    operands: list[Value] = []
    written: list[int] = []
    spec: list[tuple[str, Any]] = []
    for kind, value in launch.args:
        if kind == "in":
            operands.append(ins[value])
            spec.append(("in", len(operands) - 1))
        elif kind == "out" and value in outs:  # written by an earlier launch: read here
            operands.append(outs[value])
            spec.append(("in", len(operands) - 1))
        elif kind == "out":
            written.append(value)
            spec.append(("out", len(written) - 1))
        else:
            spec.append((kind, value))
    # one registry entry per distinct launch (plans of the same shapes share it)
    key = (id(fn), tuple(launch.grid), tuple(launch.group), tuple(spec))
    fid = _launch_ids.get(key)
    if fid is None:
        fid = codegen_functions.register(fn, tuple(launch.grid), tuple(launch.group), spec)
        _launch_ids[key] = fid
    new = Operation.create("kernel.codegen_launch", operands,
                           [out_types[j] for j in written], {"function_id": fid})
    lw.block.append(new)
    return {j: r for j, r in zip(written, new.results, strict=True)}


def _first_lines(text: str, n: int = 6) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[:n]) + (" ..." if len(lines) > n else "")


def install() -> None:
    from hwport.pir.passes import lower_to_kernel

    if lower_cinn_group not in lower_to_kernel.GROUP_LOWERING:
        lower_to_kernel.GROUP_LOWERING[:] = [lower_cinn_group]
