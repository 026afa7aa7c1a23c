"""Kernels for primitives lower_group does not fuse, for the eager JIT: arange, concat and pad
here; gather/take_along_axis, argmax/argmin/cumsum/cumprod, matmul and the saturating float ->
integer cast in the files next to it, on this file's helpers.

Each is a flat loop over the output's elements in the loop IR (a parallel loop over chunks on
a vector CPU, groups of threads on a SIMT target), rendered by the target's renderer like
lower_group's kernels; every dim is an int64 argument, so one kernel serves every shape of a
rank. `lower_index_op(op, in_metas, out_metas, attrs, target)` returns an IndexLowered, which
has what the eager JIT reads of a LoweredGroup (dialect, source, options, kernel_names,
kernels, launches(shapes)); it raises analysis.Unsupported for anything else.

- arange: out[i] = start + i * step, in float64 rounded once (float dtypes; a target without
  float64 is refused) or in wrapping int64 (integer dtypes), as phi_ops.reference's arange.
- concat: one launch per input of one copy kernel: out[o, off + m, i] = x[o, m, i] over the
  (outer, size along axis, inner) view of each input, as outer contiguous blocks of
  size * inner elements.
- pad: out[j] = x[j - before] inside x, else the value converted as `fill` converts it (the
  value is a kernel argument: one kernel per dtype and rank)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .analysis import Unsupported
from .loop_ir import (
    INDEX,
    STORAGE_ONLY,
    Binary,
    BufferParam,
    Expr,
    For,
    If,
    Kernel,
    Let,
    Load,
    ScalarParam,
    Stmt,
    Store,
    Var,
    add,
    cast,
    compute_dtype,
    const,
    div,
    is_float,
    minimum,
    mod,
    mul,
    sub,
)
from .lower_group import Launch
from .printer import print_kernel
from .target import TargetInfo
from .targets import renderer_for

__all__ = ["OPS", "IndexLowered", "delinearize", "finish", "flat_kernel", "grid_for",
           "lower_index_op", "rows_kernel", "store_value"]

Meta = tuple[tuple[int, ...], str]  # (shape, dtype)
Shapes = Mapping[tuple[str, int], Sequence[int]]
OPS = ("arange", "concat", "fill", "pad", "gather", "take_along_axis", "argmax", "argmin", "cumsum",
       "cumprod", "matmul", "cast", "scatter", "argsort", "uniform")
_SIMT_GROUP = 128  # threads per group on a SIMT target (capped by its max_group_size)


@dataclass
class IndexLowered:
    dialect: str
    source: str
    options: str
    kernel_names: list[str]
    kernels: list[Kernel]
    plan: Callable[[Shapes], list[Launch] | None]

    def launches(self, shapes: Shapes) -> list[Launch] | None:
        """The launches for these shapes; None: this call is refused (the CPU fallback)."""
        return self.plan(shapes)


def lt(a: Expr, b: Expr) -> Expr:
    return Binary("<", a, b, "bool")


def ge0(a: Expr) -> Expr:
    return Binary(">=", a, const(0), "bool")


def and_(a: Expr | None, b: Expr) -> Expr:
    return b if a is None else Binary("&&", a, b, "bool")


def store_value(v: Expr, dtype: str) -> Expr:
    """v converted to the element type of a `dtype` buffer (storage-only types via float32)."""
    if dtype in STORAGE_ONLY:
        return cast(cast(v, "float32"), dtype)
    return cast(v, dtype)


def _group_size(target: TargetInfo) -> int:
    return max(1, min(_SIMT_GROUP, target.max_group_size))


def flat_kernel(buffers: list[BufferParam], scalars: list[ScalarParam], total: Expr,
                 body: Callable[[Var], list[Stmt]], target: TargetInfo) -> Kernel:
    """A kernel running body(f) for each flat output index f in [0, total) (its own names
    start with flat_: the body may bind any other)."""
    g = Var("flat_g")
    if target.is_simt:
        size = _group_size(target)
        tid, f = Var("flat_tid"), Var("flat_i")
        inner = [Let(f, add(mul(g, size), tid)), If(lt(f, total), body(f))]
        loop = For(g, const(0), Var("grid_x"), "group",
                   [For(tid, const(0), const(size), "thread", inner)])
        return Kernel("", buffers, scalars, [loop], simt=True, group_size=(size, 1, 1))
    chunk, lo, hi, k = Var("chunk"), Var("flat_lo"), Var("flat_hi"), Var("flat_i")
    loop = For(g, const(0), Var("grid_x"), "parallel", [
        Let(lo, mul(g, chunk)), Let(hi, minimum(add(lo, chunk), total)),
        For(k, lo, sub(hi, lo), "serial", body(k))])
    return Kernel("", buffers, [*scalars, ScalarParam("chunk")], [loop])


def rows_kernel(buffers: list[BufferParam], scalars: list[ScalarParam], total: Expr,
                cols: Expr, row_part: Callable[[Var], list[Stmt]],
                col_part: Callable[[Var, Var], list[Stmt]], target: TargetInfo) -> Kernel:
    """A kernel over the flat index f = row * cols + col in [0, total): row_part(row) once per
    row (its lets: an index load, an offset), col_part(row, col) per element. On a vector CPU
    target a chunk of f runs as its rows with an inner vectorized loop over their columns (no
    division per element); on a SIMT target a work-item per element (launched as flat_kernel's
    grid_for says)."""
    if target.is_simt:
        def flat(f: Var) -> list[Stmt]:
            row, col = Var("row"), Var("col")
            return [Let(col, mod(f, cols)), Let(row, div(f, cols)), *row_part(row),
                    *col_part(row, col)]
        return flat_kernel(buffers, scalars, total, flat, target)
    g, chunk, lo, hi = Var("flat_g"), Var("chunk"), Var("flat_lo"), Var("flat_hi")
    row, col, r_lo, r_hi = Var("row"), Var("col"), Var("row_lo"), Var("row_hi")
    c_lo, c_hi, base = Var("col_lo"), Var("col_hi"), Var("row_base")
    loop = For(g, const(0), Var("grid_x"), "parallel", [
        Let(lo, mul(g, chunk)), Let(hi, minimum(add(lo, chunk), total)),
        Let(r_lo, div(lo, cols)), Let(r_hi, div(add(hi, sub(cols, const(1))), cols)),
        For(row, r_lo, sub(r_hi, r_lo), "serial", [
            Let(base, mul(row, cols)),
            Let(c_lo, Binary("max", sub(lo, base), const(0), INDEX)),
            Let(c_hi, minimum(sub(hi, base), cols)),
            *row_part(row),
            For(col, c_lo, sub(c_hi, c_lo), "vectorized", col_part(row, col))])])
    return Kernel("", buffers, [*scalars, ScalarParam("chunk")], [loop])


def grid_for(total: int, target: TargetInfo) -> tuple[tuple[int, int, int], tuple[int, int, int],
                                                   list[tuple[str, Any]]]:
    """(grid, group, the schedule's trailing arguments) for `total` elements."""
    if target.is_simt:
        size = _group_size(target)
        groups = -(-total // size)
        if groups > target.max_grid_size:
            raise ValueError(f"{groups} groups exceed the target's grid size")
        return (groups, 1, 1), (size, 1, 1), []
    chunk = max(4096, -(-total // max(1, 4 * target.compute_units)))
    return (-(-total // chunk), 1, 1), (1, 1, 1), [("i64", chunk)]


def finish(kernels: list[Kernel], target: TargetInfo, dialect: str | None,
            plan: Callable[[list[str], Shapes], list[Launch] | None]) -> IndexLowered:
    dialect = dialect or target.dialect
    renderer = renderer_for(dialect)
    for i, k in enumerate(kernels):
        digest = hashlib.sha256((dialect + "\n" + print_kernel(k)).encode()).hexdigest()
        k.name = f"cinn_{digest[:16]}" + (f"_{i}" if i else "")
    names = [k.name for k in kernels]
    return IndexLowered(dialect, renderer.render(kernels), renderer.options, names, kernels,
                        lambda shapes: plan(names, shapes))


def delinearize(f: Expr, dims: Sequence[Expr], prefix: str) -> tuple[list[Stmt], list[Var]]:
    """Lets binding each coordinate of flat index f over row-major dims."""
    stmts: list[Stmt] = []
    coords: list[Var] = [Var(f"{prefix}{d}") for d in range(len(dims))]
    rest: Expr = f
    for d in range(len(dims) - 1, -1, -1):
        stmts.append(Let(coords[d], mod(rest, dims[d]) if d else rest))
        if d:
            rest_var = Var(f"{prefix}r{d}")
            stmts.append(Let(rest_var, div(rest, dims[d])))
            rest = rest_var
    return stmts, coords


# ---- arange -------------------------------------------------------------------------------
def _arange(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
            target: TargetInfo, dialect: str | None) -> IndexLowered:
    if ins or len(outs) != 1 or len(outs[0][0]) != 1:
        raise Unsupported("arange: expected no inputs and one 1-d output")
    dtype = outs[0][1]
    floating = is_float(dtype)
    if floating and not target.float64:
        raise Unsupported("arange: float values are computed in float64, which the target lacks")
    if dtype == "bool":
        raise Unsupported("arange: bool output")
    n = Var("n")
    kind = "float64" if floating else INDEX
    start, step = Var("start", kind), Var("step", kind)

    def body(i: Var) -> list[Stmt]:
        v = Binary("+", start, Binary("*", cast(i, kind), step, kind), kind)
        return [Store("out0", i, store_value(v, dtype))]

    kernel = flat_kernel([BufferParam("out0", dtype, "out", 0)],
                          [ScalarParam("n"), ScalarParam("start", kind),
                           ScalarParam("step", kind)], n, body, target)
    a_start, a_end, a_step = attrs.get("start"), attrs.get("end"), attrs.get("step", 1)
    if a_end is None:
        a_start, a_end = 0, a_start

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        total = int(shapes[("out", 0)][0])
        if total == 0:
            return []
        grid, group, extra = grid_for(total, target)
        if floating:
            scalars: list[tuple[str, Any]] = [("f64", float(a_start)), ("f64", float(a_step))]
        else:  # truncated toward zero; one element: any step gives just start
            scalars = [("i64", _wrap64(int(a_start))),
                       ("i64", _wrap64(int(a_step)) if total > 1 else 0)]
        return [Launch(names[0], grid, group, [("out", 0), ("i64", total), *scalars, *extra])]

    return finish([kernel], target, dialect, plan)


def _wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


# ---- fill ---------------------------------------------------------------------------------
def _fill(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
          target: TargetInfo, dialect: str | None) -> IndexLowered:
    """out[i] = value, converted as phi_ops' fill converts it; the value is a kernel argument,
    so one kernel serves every value (a one-op group would bake it into the source)."""
    from hwport.phi_ops.promotion import scalar_to_dtype

    if ins or len(outs) != 1:
        raise Unsupported("fill: expected no inputs and one output")
    dtype = outs[0][1]
    floating = is_float(dtype)
    if dtype == "float64" and not target.float64:
        raise Unsupported("fill: float64 on a target without it")
    kind = "float64" if floating else INDEX
    value, total = Var("value", kind), Var("total")
    fill_value = store_value(cast(value, compute_dtype(dtype)), dtype)
    kernel = flat_kernel([BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("value", kind)], total,
                         lambda f: [Store("out0", f, fill_value)], target)
    converted = scalar_to_dtype(attrs.get("value", 0), dtype)
    value_arg: tuple[str, Any] = ("f64", float(converted)) if floating else \
        ("i64", int(converted))

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        n = math.prod(int(d) for d in shapes[("out", 0)])
        if n == 0:
            return []
        grid, group, extra = grid_for(n, target)
        return [Launch(names[0], grid, group, [("out", 0), ("i64", n), value_arg, *extra])]

    return finish([kernel], target, dialect, plan)


# ---- concat -------------------------------------------------------------------------------
def _concat(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
            target: TargetInfo, dialect: str | None) -> IndexLowered:
    if not ins or len(outs) != 1:
        raise Unsupported("concat: expected inputs and one output")
    out_shape, dtype = outs[0]
    rank = len(out_shape)
    if rank == 0 or any(m[1] != dtype or len(m[0]) != rank for m in ins):
        raise Unsupported("concat: inputs of another dtype or rank than the output")
    axis = int(attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise Unsupported(f"concat: axis {axis} out of range")
    # input o's block of mid * inner contiguous elements goes to output row o at offset off
    block, out_block, off = Var("block"), Var("out_block"), Var("off")
    total = Var("total")
    dst = Var("dst")

    def row_part(o: Var) -> list[Stmt]:
        return [Let(dst, add(mul(o, out_block), off))]

    def col_part(o: Var, j: Var) -> list[Stmt]:
        return [Store("out0", add(dst, j), Load("in0", add(mul(o, block), j), dtype))]

    kernel = rows_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("block"), ScalarParam("out_block"),
                          ScalarParam("off")], total, block, row_part, col_part, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        out = [int(d) for d in shapes[("out", 0)]]
        inner_n = math.prod(out[axis + 1:])
        launches: list[Launch] = []
        offset = 0
        for j in range(len(ins)):
            shape = [int(d) for d in shapes[("in", j)]]
            n = math.prod(shape)
            if n:
                grid, group, extra = grid_for(n, target)
                launches.append(Launch(names[0], grid, group, [
                    ("in", j), ("out", 0), ("i64", n), ("i64", shape[axis] * inner_n),
                    ("i64", out[axis] * inner_n), ("i64", offset * inner_n), *extra]))
            offset += shape[axis]
        return launches

    return finish([kernel], target, dialect, plan)


# ---- pad ----------------------------------------------------------------------------------
def _pad(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
         target: TargetInfo, dialect: str | None) -> IndexLowered:
    from hwport.phi_ops.promotion import scalar_to_dtype

    if len(ins) != 1 or len(outs) != 1 or ins[0][1] != outs[0][1]:
        raise Unsupported("pad: expected one input and one output of its dtype")
    dtype, rank = ins[0][1], len(ins[0][0])
    pads = [int(p) for p in attrs.get("pad") or []]
    if rank == 0 or len(pads) % 2 or len(pads) > 2 * rank or any(p < 0 for p in pads):
        raise Unsupported(f"pad: pairs {pads} for rank {rank}")
    floating = is_float(dtype)
    if dtype == "float64" and not target.float64:
        raise Unsupported("pad: float64 on a target without it")
    kind = "float64" if floating else INDEX
    before = [pads[2 * d] if 2 * d < len(pads) else 0 for d in range(rank)]
    xd = [Var(f"x{d}") for d in range(rank)]
    od = [Var(f"o{d}") for d in range(rank)]
    bd = [Var(f"b{d}") for d in range(rank)]
    value = Var("value", kind)
    total: Expr = od[0]
    for d in od[1:]:
        total = mul(total, d)

    def body(f: Var) -> list[Stmt]:
        stmts, coords = delinearize(f, od, "c")
        inside: Expr | None = None
        src: Expr = const(0)
        for d in range(rank):
            s = Var(f"s{d}")
            stmts.append(Let(s, sub(coords[d], bd[d])))
            inside = and_(inside, and_(ge0(s), lt(s, xd[d])))
            src = add(mul(src, xd[d]), s)
        fill_value = cast(cast(value, compute_dtype(dtype)), dtype) if dtype in STORAGE_ONLY \
            else cast(value, dtype)
        assert inside is not None
        stmts.append(If(inside, [Store("out0", f, Load("in0", src, dtype))],
                        [Store("out0", f, fill_value)]))
        return stmts

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0),
                           BufferParam("out0", dtype, "out", 0)],
                          [*(ScalarParam(v.name) for v in (*xd, *od, *bd)),
                           ScalarParam("value", kind)], total, body, target)
    converted = scalar_to_dtype(attrs.get("value", 0), dtype)
    value_arg: tuple[str, Any] = ("f64", float(converted)) if floating else \
        ("i64", int(converted))

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        x = [int(d) for d in shapes[("in", 0)]]
        out = [int(d) for d in shapes[("out", 0)]]
        n = math.prod(out)
        if n == 0:
            return []
        grid, group, extra = grid_for(n, target)
        args: list[tuple[str, Any]] = [("in", 0), ("out", 0)]
        args += [("i64", v) for v in (*x, *out, *before)]
        return [Launch(names[0], grid, group, [*args, value_arg, *extra])]

    return finish([kernel], target, dialect, plan)


Lowering = Callable[[Sequence[Meta], Sequence[Meta], Mapping[str, Any], TargetInfo,
                     str | None], IndexLowered]


def lowerings() -> dict[str, Lowering]:
    """op -> its lowering: this file's and those of gather_kernels, row_kernels,
    matmul_kernel, cast_kernel, scatter_kernel, sort_kernel and philox_kernel (on this file's
    helpers)."""
    from . import (
        cast_kernel,
        gather_kernels,
        matmul_kernel,
        philox_kernel,
        row_kernels,
        scatter_kernel,
        sort_kernel,
    )

    out: dict[str, Lowering] = {"arange": _arange, "concat": _concat, "fill": _fill,
                                "pad": _pad}
    for module in (gather_kernels, row_kernels, matmul_kernel, cast_kernel, scatter_kernel,
                   sort_kernel, philox_kernel):
        out.update(module.LOWERINGS)
    return out


def lower_index_op(op: str, ins: Sequence[Meta], outs: Sequence[Meta],
                   attrs: Mapping[str, Any], target: TargetInfo,
                   dialect: str | None = None) -> IndexLowered:
    """The kernels of one call of `op` (Unsupported: not one of OPS, or not this call)."""
    lowering = lowerings().get(op)
    if lowering is None:
        raise Unsupported(f"{op}: no index-op lowering")
    return lowering(ins, outs, attrs, target, dialect)
