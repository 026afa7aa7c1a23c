"""From a fused PIR group (an ordered op list, the values it reads, the values it writes) to its
GroupSpec: the dims of the shape class, the anchor domain, every value as an expression of the
element it is read at (broadcasts recomputed, views as index maps), the reduction phases.

Shape class: every dim of the group's inputs is an int64 kernel argument, except dims equal
to 1 (specialized: a broadcast); dims equal in the types share one argument. One kernel then
serves every shape with the same rank, the same size-1 dims and the same equalities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hwport.pir.core import Operation, Value
from hwport.pir.types import TensorType

from . import op_exprs
from .group_spec import COL, INNER, ROW, GroupSpec, Phase, Write, acc_var
from .loop_ir import (
    INDEX,
    Binary,
    BufferParam,
    Call,
    Const,
    Expr,
    Load,
    ScalarParam,
    Select,
    Var,
    add,
    cast,
    compute_dtype,
    const,
    div,
    free_vars,
    is_float,
    minimum,
    mod,
    mul,
    nodes,
    sub,
)

REDUCTIONS = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "max", "min": "min",
              "amax": "max", "amin": "min"}
VIEWS = {"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "expand", "broadcast_to",
         "copy"}
FILLS = {"fill", "full", "full_like", "zeros_like", "ones_like"}


class Unsupported(NotImplementedError):
    """The group has an op or structure this lowering does not handle (the caller falls back
    to the unfused ops)."""


@dataclass(frozen=True)
class DimSource:
    """Where a dim argument's value is read at launch: shape[axis] of input/output index."""

    role: str  # in | out
    index: int
    axis: int


def _short(op: Operation) -> str:
    return op.name.split(".", 1)[1] if op.name.startswith("pd_op.") else op.name


def _ttype(v: Value) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise Unsupported(f"value of type {v.type} (only tensors fuse)")
    return v.type


def _int_dtype_bounds(dtype: str) -> tuple[int, int]:
    import numpy as np

    if dtype == "bool":
        return 0, 1
    i = np.iinfo(dtype)
    return int(i.min), int(i.max)


def reduce_init(op: str, dtype: str) -> Expr:
    if op == "sum":
        return const(0, dtype)
    if op == "prod":
        return const(1, dtype)
    lo, hi = (float("-inf"), float("inf")) if is_float(dtype) else _int_dtype_bounds(dtype)
    return const(lo if op == "max" else hi, dtype)


def combine(op: str, a: Expr, b: Expr) -> Expr:
    """The reduction's binary step (max/min propagate NaN, as numpy's)."""
    if op == "sum":
        return Binary("+", a, b, a.dtype)
    if op == "prod":
        return Binary("*", a, b, a.dtype)
    return Call("fmax_nan" if op == "max" else "fmin_nan", (a, b), a.dtype)


class GroupAnalysis:
    def __init__(self, ops: Sequence[Operation], inputs: Sequence[Value],
                 outputs: Sequence[Value], name: str, columns: bool = False) -> None:
        self.columns = columns  # split reductions' trailing row axes off as columns
        self.ops, self.inputs, self.outputs = list(ops), list(inputs), list(outputs)
        self.name = name
        self.producer: dict[int, Operation] = {}
        for op in self.ops:
            for r in op.results:
                self.producer[id(r)] = op
        self.input_index = {id(v): i for i, v in enumerate(self.inputs)}
        self.dim_keys: dict[object, Var] = {}
        self.dim_sources: dict[str, DimSource] = {}
        self.ones: list[DimSource] = []  # dims specialized to 1
        self.dims: dict[int, list[Expr]] = {}
        self.results: dict[int, Var] = {}  # reduction results (per row)
        self._memo: dict[tuple[int, tuple[Expr, ...]], Expr] = {}
        self._bind_dims()
        for op in self.ops:
            self._propagate(op)

    # ---- dims ----------------------------------------------------------------------------
    def _bind_dims(self) -> None:
        for role, values in (("in", self.inputs), ("out", self.outputs)):
            for i, v in enumerate(values):
                t = _ttype(v)
                exprs: list[Expr] = []
                for axis, d in enumerate(t.shape):
                    src = DimSource(role, i, axis)
                    if d == 1:
                        self.ones.append(src)
                        exprs.append(const(1))
                        continue
                    key: object = d if d != -1 else ("unknown", role, i, axis)
                    if key not in self.dim_keys:
                        var = Var(f"d{len(self.dim_keys)}")
                        self.dim_keys[key] = var
                        self.dim_sources[var.name] = src
                    exprs.append(self.dim_keys[key])
                if role == "in":
                    self.dims[id(v)] = exprs
                else:
                    self.dims.setdefault(id(v), exprs)

    def dim_of(self, d: object) -> Expr:
        """A type dim as an expression (a dim argument, or a constant for a dim the group's
        inputs and outputs do not show)."""
        if d == 1:
            return const(1)
        if d in self.dim_keys:
            return self.dim_keys[d]
        if isinstance(d, int) and d >= 0:
            return const(d)
        raise Unsupported(f"dim {d} is neither an input/output dim nor static")

    def _broadcast(self, shapes: list[list[Expr]]) -> list[Expr]:
        rank = max((len(s) for s in shapes), default=0)
        out: list[Expr] = []
        for axis in range(rank):
            pick: Expr = const(1)
            for s in shapes:
                k = axis - (rank - len(s))
                if k < 0:
                    continue
                d = s[k]
                if d == const(1):
                    continue
                if pick == const(1) or (isinstance(pick, Const) and isinstance(d, Var)):
                    pick = d
            out.append(pick)
        return out

    def _propagate(self, op: Operation) -> None:
        name = _short(op)
        ins = [self.dims_of(v) for v in op.operands if v is not None]
        res = op.results
        if len(res) != 1:
            raise Unsupported(f"{op.name}: {len(res)} results")
        out_t = _ttype(res[0])
        if name in REDUCTIONS:
            axes = self.reduce_axes(op)
            keep = bool(op.attr("keepdim", False))
            dims = [const(1) if a in axes else d for a, d in enumerate(ins[0])]
            self.dims[id(res[0])] = dims if keep else [d for a, d in enumerate(ins[0])
                                                         if a not in axes]
        elif name == "transpose":
            perm = self._perm(op, len(ins[0]))
            self.dims[id(res[0])] = [ins[0][p] for p in perm]
        elif name in ("squeeze", "unsqueeze", "reshape", "flatten"):
            self.dims[id(res[0])] = self._reshaped(ins[0], out_t)
        elif name in ("expand", "broadcast_to"):
            self.dims[id(res[0])] = self._broadcast(
                [ins[0], [self.dim_of(d) for d in out_t.shape]])
        elif name in FILLS or op.name == "builtin.constant":
            if name in ("full_like", "zeros_like", "ones_like"):
                self.dims[id(res[0])] = list(ins[0])
            else:
                self.dims[id(res[0])] = [self.dim_of(d) for d in out_t.shape]
        elif name == "cast" or name in op_exprs.op_exprs():
            self.dims[id(res[0])] = self._broadcast(ins)
        elif name == "arange":
            self.dims[id(res[0])] = [self.dim_of(d) for d in out_t.shape]
        elif name == "pad":
            pads = _pads(op, len(ins[0]))
            self.dims[id(res[0])] = [add(d, pads[2 * a] + pads[2 * a + 1])
                                     for a, d in enumerate(ins[0])]
        elif name == "gather":
            axis = int(op.attr("axis", 0)) % max(1, len(ins[0]))
            self.dims[id(res[0])] = [ins[1][0] if a == axis else d
                                     for a, d in enumerate(ins[0])]
        elif name == "take_along_axis":
            axis = int(op.attr("axis")) % max(1, len(ins[0]))
            xd = [ins[1][a] if a == axis else d for a, d in enumerate(ins[0])]
            self.dims[id(res[0])] = self._broadcast([xd, ins[1]])
        else:
            raise Unsupported(f"{op.name} does not fuse here")

    def _reshaped(self, src: list[Expr], out_t: TensorType) -> list[Expr]:
        """The output dims of a reshape: type dims the shape class knows, else the product
        of the input dims they merge (a static dim the inputs/outputs do not show)."""
        out: list[Expr] = []
        nonone = [d for d in src if d != const(1)]
        for d in out_t.shape:
            if d == 1:
                out.append(const(1))
            elif d in self.dim_keys:
                out.append(self.dim_keys[d])
            elif len(nonone) == 1 and len([x for x in out_t.shape if x != 1]) == 1:
                out.append(nonone[0])
            else:
                out.append(self._merged(src, d))
        return out

    def _merged(self, src: list[Expr], d: object) -> Expr:
        # the product of a run of input dims whose static product equals d
        vals = [self._static(x) for x in src]
        for i in range(len(src)):
            p = 1
            for j in range(i, len(src)):
                if vals[j] is None:
                    break
                p *= vals[j]  # type: ignore[operator]
                if p == d and j > i:
                    e: Expr = const(1)
                    for x in src[i:j + 1]:
                        e = mul(e, x)
                    return e
        if isinstance(d, int) and d >= 0:
            return const(d)
        raise Unsupported(f"reshape to dim {d}: cannot express it in the group's dims")

    def _static(self, e: Expr) -> int | None:
        if isinstance(e, Const):
            return int(e.value)
        for key, var in self.dim_keys.items():
            if var == e and isinstance(key, int):
                return key
        return None

    def dims_of(self, v: Value) -> list[Expr]:
        if id(v) not in self.dims:
            raise Unsupported("a value read by the group is neither an input nor made in it")
        return self.dims[id(v)]

    def reduce_axes(self, op: Operation) -> tuple[int, ...]:
        x = op.operands[0]
        assert x is not None
        rank = _ttype(x).ndim
        axis = op.attr("axis", [])
        if axis is None or axis == []:
            return tuple(range(rank))
        if isinstance(axis, int):
            axis = [axis]
        return tuple(sorted({a % rank if rank else 0 for a in axis}))

    @staticmethod
    def _perm(op: Operation, rank: int) -> list[int]:
        perm = op.attr("perm")
        if perm is None:
            return list(range(rank))[::-1]
        return [p % rank for p in perm]

    # ---- values as expressions -----------------------------------------------------------
    def value_at(self, v: Value, idx: tuple[Expr, ...]) -> Expr:
        """v's element at index idx (one expression per dim of v), in v's compute dtype."""
        key = (id(v), idx)
        if key not in self._memo:
            self._memo[key] = self._value_at(v, idx)
        return self._memo[key]

    def _value_at(self, v: Value, idx: tuple[Expr, ...]) -> Expr:
        t = _ttype(v)
        ct = compute_dtype(t.dtype)
        if id(v) in self.input_index:
            i = self.input_index[id(v)]
            dims = self.dims_of(v)
            return cast(_load(f"in{i}", t.dtype, linearize(idx, dims)), ct)
        if id(v) in self.results:
            return cast(self.results[id(v)], ct)
        op = self.producer.get(id(v))
        if op is None:
            raise Unsupported("a value read by the group is neither an input nor made in it")
        name = _short(op)
        out_dims = self.dims_of(v)
        if name in REDUCTIONS:
            raise Unsupported(f"{op.name}'s result read before its phase")
        if name in FILLS or op.name == "builtin.constant":
            key = {"fill": "value", "full": "fill_value", "full_like": "fill_value",
                   "builtin.constant": "value"}.get(name if name in FILLS else op.name)
            value = {"zeros_like": 0, "ones_like": 1}.get(name)
            if value is None:
                value = op.attr(key)
            if isinstance(value, list | tuple):
                flat = _flatten(value)
                if len(set(flat)) != 1:
                    raise Unsupported("a constant tensor that is not one value")
                value = flat[0]
            return const(value, ct)
        if name == "arange":
            return self._arange(op, idx[0], ct)
        x = op.operands[0]
        assert x is not None
        xdims = self.dims_of(x)
        if name in ("pad", "gather", "take_along_axis"):
            return cast(self._index_op(op, name, x, xdims, idx, out_dims, ct), ct)
        if name == "transpose":
            perm = self._perm(op, len(xdims))
            src = [const(0)] * len(xdims)
            for i, p in enumerate(perm):
                src[p] = idx[i]
            return cast(self.value_at(x, tuple(src)), ct)
        if name in ("squeeze", "unsqueeze", "reshape", "flatten"):
            flat = linearize(idx, out_dims)
            return cast(self.value_at(x, delinearize(flat, xdims)), ct)
        if name in ("expand", "broadcast_to", "copy"):
            return cast(self.value_at(x, _bcast_index(idx, out_dims, xdims)), ct)
        if name == "cast":
            return cast(self.value_at(x, _bcast_index(idx, out_dims, xdims)), ct)
        return self._elementwise(op, name, v, idx, out_dims, ct)

    def _arange(self, op: Operation, i: Expr, ct: str) -> Expr:
        """start + i * step, in double for a float dtype (int64 for integers), then ct."""
        wide = "float64" if is_float(ct) else "int64"
        start, step = op.attr("start", 0), op.attr("step", 1)
        if op.attr("end") is None:  # arange(end)
            start = 0
        value = Binary("+", const(start, wide),
                       Binary("*", cast(i, wide), const(step, wide), wide), wide)
        return cast(value, ct)

    def _index_op(self, op: Operation, name: str, x: Value, xdims: list[Expr],
                  idx: tuple[Expr, ...], out_dims: list[Expr], ct: str) -> Expr:
        if name == "pad":
            pads = _pads(op, len(xdims))
            src = [sub(c, pads[2 * a]) for a, c in enumerate(idx)]
            inside: Expr | None = None
            for a, (c, d) in enumerate(zip(src, xdims, strict=True)):
                if pads[2 * a] == 0 and pads[2 * a + 1] == 0:
                    continue
                ok = Binary("&&", Binary(">=", c, const(0), "bool"),
                            Binary("<", c, d, "bool"), "bool")
                inside = ok if inside is None else Binary("&&", inside, ok, "bool")
            value = cast(self.value_at(x, tuple(src)), ct)
            if inside is None:
                return value
            fill = op.attr("value", 0.0)
            return Select(inside, value, _fill_const(fill, ct), ct)
        index = op.operands[1]
        assert index is not None
        axis = int(op.attr("axis", 0)) % max(1, len(xdims))
        if name == "gather":
            i = cast(self.value_at(index, (idx[axis],)), INDEX)
            src = list(idx)
        else:
            i = cast(self.value_at(index, _bcast_index(idx, out_dims, self.dims_of(index))),
                     INDEX)
            src = list(_bcast_index(idx, out_dims, xdims))
        # a negative index counts from the end (the host checked the range)
        src[axis] = Select(Binary("<", i, const(0), "bool"), add(i, xdims[axis]), i, INDEX)
        return self.value_at(x, tuple(src))

    def _elementwise(self, op: Operation, name: str, v: Value, idx: tuple[Expr, ...],
                     out_dims: list[Expr], ct: str) -> Expr:
        spec = op_exprs.op_exprs()[name]
        operands = [o for o in op.operands]
        in_cts = [compute_dtype(_ttype(o).dtype) for o in operands if o is not None]
        # the compute type: the output's, or the promoted inputs' for a bool result
        work = ct
        if _ttype(v).dtype == "bool" and name != "where":
            work = in_cts[0]
            for c in in_cts[1:]:
                work = op_exprs.promote(work, c)
        args: dict[str, Expr] = {}
        for pname, o in zip(spec.inputs, operands, strict=True):
            if o is None:
                raise Unsupported(f"{op.name}: absent operand {pname}")
            e = self.value_at(o, _bcast_index(idx, out_dims, self.dims_of(o)))
            args[pname] = cast(e, "bool") if (name == "where" and pname == "condition") \
                else cast(e, work)
        attrs = {a: op.attr(a) for a in _attr_names(spec)}
        return cast(op_exprs.instantiate(name, args, attrs, work), ct)

    # ---- the spec ------------------------------------------------------------------------
    def specs(self) -> list[GroupSpec]:
        """The group's kernels: one per reduction domain (input shape and axes) with its
        reductions and every output that reads them (of the domain's or its rows' shape),
        one per shape for the outputs that read no reduction."""
        domains: dict[tuple, list[Operation]] = {}
        for op in self.ops:
            if _short(op) in REDUCTIONS:
                x = op.operands[0]
                assert x is not None
                domains.setdefault((tuple(self.dims_of(x)), self.reduce_axes(op)), []).append(op)
        assigned: dict[tuple, list[int]] = {key: [] for key in domains}
        left: list[int] = []
        for j, o in enumerate(self.outputs):
            read = {key for key, reds in domains.items()
                    if any(id(r.result()) in self._reductions_read(o) for r in reds)}
            if len(read) > 1:
                raise Unsupported("an output reads reductions of different domains")
            dims = self.dims_of(o)
            key = next(iter(read), None)
            if key is None:  # reads no reduction: a domain kernel takes it if it fits there
                key = next((k for k in domains if self._fits(dims, k)), None)
                if key is None:
                    left.append(j)
                    continue
            if not self._fits(dims, key):
                raise Unsupported("an output of a reduction's consumers that is neither of "
                                  "the reduction's domain nor of its rows")
            assigned[key].append(j)
        out = [self._build(list(key[0]), key[1], reds, assigned[key])
               for key, reds in domains.items()]
        by_shape: dict[tuple[Expr, ...], list[int]] = {}
        for j in left:
            by_shape.setdefault(tuple(self.dims_of(self.outputs[j])), []).append(j)
        for shape, js in by_shape.items():
            anchor = list(shape)
            flat = self._build(anchor, tuple(range(len(anchor))), [], js)
            if _has_divmod(flat) and len(anchor) > 1:
                flat = self._build(anchor, (len(anchor) - 1,), [], js)
            out.append(flat)
        return out

    def _fits(self, dims: list[Expr], key: tuple) -> bool:
        anchor, axes = list(key[0]), key[1]
        rows = [d for a, d in enumerate(anchor) if a not in axes and d != const(1)]
        return dims == anchor or [d for d in dims if d != const(1)] == rows

    def _reductions_read(self, v: Value) -> set[int]:
        """ids of the reduction results v depends on."""
        out: set[int] = set()
        stack, seen = [v], set()
        while stack:
            x = stack.pop()
            op = self.producer.get(id(x))
            if op is None or id(op) in seen:
                continue
            seen.add(id(op))
            if _short(op) in REDUCTIONS:
                out.add(id(op.result()))
            stack.extend(o for o in op.operands if o is not None)
        return out

    def _build(self, anchor: list[Expr], axes: tuple[int, ...], reds: list[Operation],
               outputs: list[int]) -> GroupSpec:
        self._memo.clear()
        self.results.clear()
        row_axes = [a for a in range(len(anchor)) if a not in axes]
        all_row_dims = [anchor[a] for a in row_axes]
        # columns: the row axes after the last reduced one (contiguous in memory), when the
        # schedule wants them apart (a reduction over other than the innermost axes)
        col_axes = [a for a in row_axes if axes and a > max(axes)] if (
            self.columns and reds) else []
        outer_axes = [a for a in row_axes if a not in col_axes]
        row_dims = [anchor[a] for a in outer_axes]
        col_dims = [anchor[a] for a in col_axes]
        inner_dims = [anchor[a] for a in axes]
        coords: list[Expr] = [const(0)] * len(anchor)
        for a, c in zip(outer_axes, delinearize(ROW, row_dims), strict=True):
            coords[a] = c
        for a, c in zip(col_axes, delinearize(COL, col_dims), strict=True):
            coords[a] = c
        for a, c in zip(axes, delinearize(INNER, inner_dims), strict=True):
            coords[a] = c
        idx = tuple(coords)
        spec = GroupSpec(self.name, self._buffers(), self._dim_params(), row_dims, inner_dims,
                         col_dims=col_dims)
        row_index = add(mul(ROW, _product(col_dims)), COL) if col_dims else ROW
        count: Expr = const(1)
        for d in inner_dims:
            count = mul(count, d)
        for n, op in enumerate(reds):
            name = _short(op)
            x = op.operands[0]
            assert x is not None
            xt = _ttype(x).dtype
            out_dt = _ttype(op.result()).dtype
            acc_dt = compute_dtype(out_dt) if is_float(out_dt) else (
                "int64" if name in ("sum", "prod") else out_dt)
            if is_float(xt) and not is_float(acc_dt):
                acc_dt = compute_dtype(xt)
            value = cast(self.value_at(x, idx), acc_dt)
            red = REDUCTIONS[name]
            finalize = None
            if name == "mean":
                finalize = Binary("/", acc_var(acc_dt), cast(count, acc_dt), acc_dt)
            result = Var(f"red{n}", acc_dt)
            spec.phases.append(Phase(result, red, value, reduce_init(red, acc_dt), acc_dt,
                                     finalize))
            self.results[id(op.result())] = result
        n_row_axes = len(row_axes)
        for j in outputs:
            o = self.outputs[j]
            t = _ttype(o)
            odims = self.dims_of(o)
            buf = f"out{j}"
            if odims == anchor:
                value = _store_value(self.value_at(o, idx), t.dtype)
                spec.element_writes.append(Write(buf, linearize(idx, odims), value))
                continue
            if not reds:
                raise Unsupported("an output that is not of the group's shape")
            if len(odims) == len(anchor):
                oidx = tuple(const(0) if a in axes else c for a, c in enumerate(idx))
            elif len(odims) == n_row_axes:
                oidx = tuple(idx[a] for a in row_axes)
            else:
                raise Unsupported("an output neither of the domain's nor of the rows' shape")
            if [d for d in odims if d != const(1)] != [d for d in all_row_dims
                                                       if d != const(1)]:
                raise Unsupported("an output neither of the domain's nor of the rows' shape")
            value = _store_value(self.value_at(o, oidx), t.dtype)
            if "k" in free_vars(value):
                raise Unsupported("a per-row output that reads per-element values")
            spec.row_writes.append(Write(buf, row_index, value))
        used = _buffers_used(spec)
        spec.buffers = [b for b in spec.buffers if b.name in used]
        return spec

    def _buffers(self) -> list[BufferParam]:
        out = [BufferParam(f"in{i}", _ttype(v).dtype, "in", i) for i, v in enumerate(self.inputs)]
        out += [BufferParam(f"out{j}", _ttype(v).dtype, "out", j)
                for j, v in enumerate(self.outputs)]
        return out

    def _dim_params(self) -> list[ScalarParam]:
        return [ScalarParam(v.name, INDEX) for v in self.dim_keys.values()]


def _attr_names(spec: op_exprs.OpExpr) -> list[str]:
    names: list[str] = []
    stack = [spec.tree]
    while stack:
        n = stack.pop()
        if n.kind == "id" and n.value not in spec.inputs and n.value not in names:
            names.append(n.value)
        stack.extend(n.args)
    return sorted(names)


def _pads(op: Operation, rank: int) -> list[int]:
    p = [int(v) for v in op.attr("pad", [])]
    return p + [0] * (2 * rank - len(p))


def _fill_const(value: object, ct: str) -> Expr:
    if is_float(ct):
        return const(float(value), ct)  # type: ignore[arg-type]
    if ct == "bool":
        return const(bool(value), ct)
    lo, hi = _int_dtype_bounds(ct)
    return const(min(max(int(float(value)), lo), hi), ct)  # type: ignore[arg-type]


def _flatten(v: object) -> list:
    if isinstance(v, list | tuple):
        out: list = []
        for x in v:
            out += _flatten(x)
        return out
    return [v]


def _load(buf: str, dtype: str, index: Expr) -> Expr:
    return Load(buf, index, dtype)


def _store_value(value: Expr, dtype: str) -> Expr:
    return cast(value, dtype)


def linearize(idx: Sequence[Expr], dims: Sequence[Expr]) -> Expr:
    """Row-major offset of idx in a contiguous tensor of dims (Horner form: re-linearizing a
    delinearized index folds back to it)."""
    out: Expr = const(0)
    for c, d in zip(idx, dims, strict=True):
        out = add(mul(out, d), c)
    return out


def delinearize(flat: Expr, dims: Sequence[Expr]) -> tuple[Expr, ...]:
    """Coordinates of a row-major offset (the first one without a modulo: it is in range)."""
    coords: list[Expr] = []
    q = flat
    for d in reversed(dims[1:]):
        coords.append(mod(q, d))
        q = div(q, d)
    if dims:
        coords.append(q)
    return tuple(reversed(coords))


def _bcast_index(idx: Sequence[Expr], out_dims: Sequence[Expr],
                 in_dims: Sequence[Expr]) -> tuple[Expr, ...]:
    """The operand's index for the output's idx under numpy broadcasting."""
    off = len(out_dims) - len(in_dims)
    if off < 0:
        raise Unsupported("an operand of higher rank than its op's result")
    out: list[Expr] = []
    for k, d in enumerate(in_dims):
        od = out_dims[k + off]
        c = idx[k + off]
        if d == od:
            out.append(c)
        elif d == const(1):
            out.append(const(0))
        else:  # two dim symbols the types only say are broadcastable: 1 or equal at run time
            one = Binary("==", d, const(1), "bool")
            out.append(Select(one, const(0), minimum(c, d - 1), INDEX))
    return tuple(out)


def _buffers_used(spec: GroupSpec) -> set[str]:
    names: set[str] = set()
    exprs: list[Expr] = [p.value for p in spec.phases]
    for w in [*spec.element_writes, *spec.row_writes]:
        names.add(w.buf)
        exprs += [w.index, w.value]
    return names | {e.buf for e in nodes(exprs) if isinstance(e, Load)}


def _product(dims: Sequence[Expr]) -> Expr:
    out: Expr = const(1)
    for d in dims:
        out = mul(out, d)
    return out


def _has_divmod(spec: GroupSpec) -> bool:
    """Whether an element's index math divides (the flat form did not fold back)."""
    indices = [w.index for w in spec.element_writes]
    indices += [e.index for e in nodes([w.value for w in spec.element_writes])
                if isinstance(e, Load)]
    return any(isinstance(e, Binary) and e.op in ("/", "%") and e.dtype == INDEX
               for e in nodes(indices))
