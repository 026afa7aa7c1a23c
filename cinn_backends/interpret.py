"""A numpy interpreter of the loop IR: the reference semantics of a scheduled kernel, which the
tests hold the lowering and the schedules to (independently of any C compiler).

Scalars are numpy scalars of the expression's dtype (float32 math stays float32; integers
wrap), index arithmetic is Python ints, float16/bfloat16 values are numpy float16 /
ml_dtypes.bfloat16 scalars. Parallel and group loops run their iterations one after the other
(they are independent); a thread loop runs its threads in lockstep between barriers (each
thread a generator that stops at every Barrier and ShuffleXor), sharing the group's local
arrays; a sub-group is any aligned block of lanes (ShuffleXor's mask picks the partner)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .loop_ir import (
    Alloc,
    Assign,
    Barrier,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    For,
    If,
    Kernel,
    Let,
    Load,
    Local,
    Reduce,
    Select,
    ShuffleXor,
    Stmt,
    Store,
    Unary,
    Var,
)

Env = dict[str, Any]


def np_dtype(dtype: str) -> Any:
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return np.dtype(np.bool_)
    return np.dtype(dtype)


def _scalar(value: Any, dtype: str) -> Any:
    if dtype == "bool":
        return bool(value)
    if dtype == "int64":
        return int(value)
    t = np_dtype(dtype)
    if t.kind in "iu":
        return _wrap_int(int(value), dtype)
    return t.type(value)


def _wrap_int(v: Any, dtype: str) -> Any:
    if dtype == "int64" or dtype == "bool":
        if dtype == "int64":
            v = int(v)
            return (v + (1 << 63)) % (1 << 64) - (1 << 63)
        return bool(v)
    t = np_dtype(dtype)
    if t.kind in "iu":
        bits = 8 * t.itemsize
        v = int(v) % (1 << bits)
        if t.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return t.type(v)
    return t.type(v)


def _ipow(b: int, e: int) -> int:
    if e < 0:
        return 1 if b == 1 else ((-1 if e & 1 else 1) if b == -1 else 0)
    return b ** e


def _fmax(x: Any, y: Any) -> Any:
    return x if (x >= y or x != x) else y


def _fmin(x: Any, y: Any) -> Any:
    return x if (x <= y or x != x) else y


def _call(fn: str, args: list[Any], arg_dtype: str) -> Any:
    x = args[0]
    isf = arg_dtype in ("float32", "float64")
    t = np_dtype(arg_dtype).type if isf else None
    with np.errstate(all="ignore"):
        if fn == "fmax_nan":
            return _fmax(x, args[1]) if arg_dtype != "bool" else bool(x or args[1])
        if fn == "fmin_nan":
            return _fmin(x, args[1]) if arg_dtype != "bool" else bool(x and args[1])
        if not isf:
            if fn in ("floor", "ceil", "nearbyint"):
                return x
            if fn in ("isnan", "isinf"):
                return False
            if fn == "isfinite":
                return True
            if fn == "fabs":
                return _wrap_int(abs(int(x)), arg_dtype)
            if fn == "sign":
                return _wrap_int(int(x > 0) - int(x < 0), arg_dtype)
            if fn == "pow":
                return _wrap_int(_ipow(int(x), int(args[1])), arg_dtype)
            if fn == "bitwise_not":
                return (not x) if arg_dtype == "bool" else _wrap_int(~int(x), arg_dtype)
            if fn in ("floor_divide", "remainder"):
                a, b = int(x), int(args[1])
                if arg_dtype == "bool":
                    return bool(a & b) if fn == "floor_divide" else False
                if b == 0:
                    return _wrap_int(0, arg_dtype)
                return _wrap_int(a // b if fn == "floor_divide" else a % b, arg_dtype)
            raise ValueError(f"interpret: {fn} of {arg_dtype}")
        assert t is not None
        if fn == "erf":
            return t(math.erf(float(x))) if x == x else x
        if fn == "isnan":
            return bool(np.isnan(x))
        if fn == "isinf":
            return bool(np.isinf(x))
        if fn == "isfinite":
            return bool(np.isfinite(x))
        table: dict[str, Callable[..., Any]] = {
            "fabs": np.abs, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
            "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "floor": np.floor,
            "ceil": np.ceil, "nearbyint": np.rint, "pow": np.power, "sign": np.sign,
            "floor_divide": np.floor_divide, "remainder": np.remainder}
        return t(table[fn](*args))


def _binary(op: str, a: Any, b: Any, dtype: str) -> Any:
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    if op == ">=":
        return bool(a >= b)
    if op == "&&":
        return bool(a) and bool(b)
    if op == "||":
        return bool(a) or bool(b)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    isf = dtype in ("float32", "float64")
    if isf:
        with np.errstate(all="ignore"):
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                return a / b
        raise ValueError(f"interpret: {op} on floats")
    a, b = int(a), int(b)
    if op == "/":  # C's truncating division (non-negative indices; helpers do the rest)
        q = abs(a) // abs(b)
        return _wrap_int(q if (a >= 0) == (b >= 0) else -q, dtype)
    if op == "%":
        r = abs(a) % abs(b)
        return _wrap_int(r if a >= 0 else -r, dtype)
    res = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
    return _wrap_int(res, dtype)


def _cast(v: Any, src: str, dst: str) -> Any:
    if dst == "bool":
        return bool(v != 0)
    if dst == "int64" or np_dtype(dst).kind in "iu":
        if src in ("float16", "bfloat16", "float32", "float64"):
            f = float(v)  # truncated toward zero; NaN -> 0; beyond the range: saturated
            if f != f:
                return _wrap_int(0, dst)
            info = np.iinfo(np_dtype(dst))
            if f <= info.min:
                return _wrap_int(int(info.min), dst)
            if f >= info.max:
                return _wrap_int(int(info.max), dst)
            return _wrap_int(int(f), dst)
        return _wrap_int(int(v), dst)
    if src in ("float16", "bfloat16") and dst in ("float16", "bfloat16"):
        v = np.float32(v)
    return np_dtype(dst).type(v)


def compile_expr(e: Expr) -> Callable[[Env], Any]:
    """e as a closure over an environment (vars and arrays by name)."""
    if isinstance(e, Const):
        value = _scalar(e.value, e.dtype)
        return lambda env: value
    if isinstance(e, Var):
        name = e.name
        return lambda env: env[name]
    if isinstance(e, Load):
        idx, buf = compile_expr(e.index), e.buf
        if e.dtype == "bool":
            return lambda env: bool(env[buf][idx(env)])
        return lambda env: env[buf][idx(env)]
    if isinstance(e, Unary):
        a, op, dt = compile_expr(e.a), e.op, e.dtype
        if op == "not":
            return lambda env: not a(env)
        if op == "neg":
            if dt in ("float32", "float64"):
                return lambda env: -a(env)
            return lambda env: _wrap_int(-int(a(env)), dt)
        if dt == "bool":
            return lambda env: not a(env)
        return lambda env: _wrap_int(~int(a(env)), dt)
    if isinstance(e, Binary):
        a, b, op, dt = compile_expr(e.a), compile_expr(e.b), e.op, e.dtype
        if dt == "int64" and op in ("+", "*", "-"):  # index math: Python ints, wrapped
            fast = {"+": lambda x, y: x + y, "*": lambda x, y: x * y,
                    "-": lambda x, y: x - y}[op]

            def int64_op(env: Env) -> int:
                v = fast(int(a(env)), int(b(env)))
                return v if -(1 << 63) <= v < (1 << 63) else _wrap_int(v, "int64")

            return int64_op
        if op == "&&":
            return lambda env: bool(a(env)) and bool(b(env))
        if op == "||":
            return lambda env: bool(a(env)) or bool(b(env))
        return lambda env: _binary(op, a(env), b(env), dt)
    if isinstance(e, Select):
        c, a, b = compile_expr(e.cond), compile_expr(e.a), compile_expr(e.b)
        return lambda env: a(env) if c(env) else b(env)
    if isinstance(e, Cast):
        a, src, dst = compile_expr(e.a), e.a.dtype, e.dtype
        return lambda env: _cast(a(env), src, dst)
    if isinstance(e, Call):
        args = [compile_expr(x) for x in e.args]
        fn, adt = e.fn, e.args[0].dtype
        return lambda env: _call(fn, [f(env) for f in args], adt)
    raise TypeError(f"interpret: unknown expression {e!r}")


_LANE = "__lane"  # the thread's index in its group, for ShuffleXor


class _Run:
    def __init__(self, grid: Sequence[int], group: Sequence[int]) -> None:
        self.grid, self.group = list(grid), list(group)
        self.shared: dict[str, np.ndarray] = {}
        # id -> (the expression, kept alive so that its id is not reused; its closure)
        self.cache: dict[int, tuple[Expr, Callable[[Env], Any]]] = {}
        self.combined: dict[int, tuple[Reduce, Expr]] = {}
        self.exchange: dict[int, dict[int, Any]] = {}  # ShuffleXor: id -> lane -> value

    def ev(self, e: Expr, env: Env) -> Any:
        hit = self.cache.get(id(e))
        if hit is None:
            hit = self.cache[id(e)] = (e, compile_expr(e))
        return hit[1](env)

    def exec(self, body: list[Stmt], env: Env) -> Iterator[None]:
        for s in body:
            if isinstance(s, For):
                yield from self._for(s, env)
            elif isinstance(s, Store):
                arr = env[s.buf]
                arr[self.ev(s.index, env)] = self.ev(s.value, env)
            elif isinstance(s, Let | Assign):
                env[s.var.name] = self.ev(s.value, env)
            elif isinstance(s, Local):
                env[s.var.name] = self.ev(s.init, env)
            elif isinstance(s, Reduce):
                hit = self.combined.get(id(s))
                if hit is None:
                    from .analysis import combine

                    hit = self.combined[id(s)] = (s, combine(s.op, s.var, s.value))
                env[s.var.name] = self.ev(hit[1], env)
            elif isinstance(s, Alloc):
                if s.scope == "local":
                    if s.name not in self.shared:
                        self.shared[s.name] = np.zeros(s.size, np_dtype(s.dtype))
                    env[s.name] = self.shared[s.name]
                else:
                    env[s.name] = np.zeros(s.size, np_dtype(s.dtype))
            elif isinstance(s, Barrier):
                yield
            elif isinstance(s, ShuffleXor):
                yield from self._shuffle(s, env)
            elif isinstance(s, If):
                yield from self.exec(s.then if self.ev(s.cond, env) else s.orelse, env)
            else:
                raise TypeError(f"interpret: unknown statement {s!r}")

    def _shuffle(self, s: ShuffleXor, env: Env) -> Iterator[None]:
        """Every thread posts its value and waits (a lockstep point, as a barrier), reads its
        partner's, and waits again, so that no thread posts the next value (the same statement
        in a loop) before all have read this one."""
        lane = env[_LANE]
        posted = self.exchange.setdefault(id(s), {})
        posted[lane] = self.ev(s.value, env)
        yield
        partner = lane ^ s.mask
        if partner not in posted:
            raise RuntimeError(f"interpret: shuffle_xor mask {s.mask} reaches lane {partner}, "
                               f"outside the group")
        env[s.var.name] = posted[partner]
        yield

    def _for(self, s: For, env: Env) -> Iterator[None]:
        name = s.var.name
        if s.kind in ("parallel", "group"):
            for i in range(self.grid[s.axis]):
                env[name] = i
                self.shared = {}
                yield from self.exec(s.body, env)
            return
        if s.kind == "thread":
            self._threads(s, env)
            return
        start = self.ev(s.start, env)
        for i in range(start, start + self.ev(s.extent, env), s.step):
            env[name] = i
            yield from self.exec(s.body, env)

    def _threads(self, s: For, env: Env) -> None:
        n = self.group[s.axis]
        gens = []
        for t in range(n):
            tenv = dict(env)
            tenv[s.var.name] = t
            tenv[_LANE] = t
            gens.append(self.exec(s.body, tenv))
        live = list(gens)
        while live:
            done = []
            for g in live:
                try:
                    next(g)
                except StopIteration:
                    done.append(g)
            if done and len(done) != len(live):
                raise RuntimeError("interpret: threads of a group diverge at a barrier")
            live = [g for g in live if g not in done]


def run_kernel(kernel: Kernel, grid: Sequence[int], group: Sequence[int],
               args: Sequence[Any]) -> None:
    """Runs one launch: args in the kernel's parameter order (flat numpy arrays for buffers,
    written in place; ints/floats for scalars)."""
    from .rewrite import deep_recursion

    env: Env = {}
    for p, a in zip(kernel.params, args, strict=True):
        env[p.name] = a
    r = _Run(grid, group)
    with deep_recursion():
        for _ in r.exec(kernel.body, env):
            raise RuntimeError("interpret: a barrier outside a thread loop")


def interpret(lowered: Any, inputs: Sequence[np.ndarray],
              out_specs: Sequence[tuple[tuple[int, ...], Any]]) -> list[np.ndarray]:
    """Runs a LoweredGroup's launches on numpy inputs; out_specs: (shape, dtype) per output."""
    ins = [np.array(a, order="C").reshape(-1) for a in inputs]
    outs = [np.zeros(int(np.prod(shape)), dtype=dt) for shape, dt in out_specs]
    shapes: Mapping[Any, Any] = {("in", i): np.shape(a) for i, a in enumerate(inputs)}
    shapes = {**shapes, **{("out", j): tuple(s) for j, (s, _) in enumerate(out_specs)}}
    kernels = {k.name: k for k in lowered.kernels}
    for launch in lowered.launches(shapes):
        args = [ins[v] if kind == "in" else outs[v] if kind == "out" else v
                for kind, v in launch.args]
        run_kernel(kernels[launch.kernel], launch.grid, launch.group, args)
    return [o.reshape(shape) for o, (shape, _) in zip(outs, out_specs, strict=True)]
