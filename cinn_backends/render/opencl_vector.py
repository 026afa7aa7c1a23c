"""Vectorized loops in OpenCL C: a loop of kind "vectorized" rendered with explicit vector
types (floatN values, vloadN / vstoreN at consecutive addresses) instead of a scalar loop.

CPU OpenCL implementations (PoCL) run each work-item as one thread and vectorize only what the
source spells as vectors; the item schedule (schedule_simt.py) runs schedule_cpu's row bodies
per work-item, whose lane loops (W partial accumulators) and element loops are "vectorized"
loops. Rendered here:

- a loop of constant extent W (2, 4, 8 or 16) from 0 (the lane loops): one vector iteration;
- any other vectorized loop: a vector loop over whole W-element blocks, then the scalar loop
  over the rest (W = 16 / 8 lanes of 4- / 8-byte values).

Per lane the arithmetic is the scalar loop's (the same operations in the same order, exp
through the same polynomial), so results do not depend on the rendering. The loop variable
must reach memory only as `base + var` (consecutive elements: vloadN / vstoreN); values that do
not depend on it stay scalars (OpenCL widens them). Anything else — another index form, a
statement other than Let and Store, a 8/16-bit or half-precision value, a helper without a
vector form — raises NoVector and the loop is rendered as scalars."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..loop_ir import (
    COMPARISONS,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    For,
    Let,
    Load,
    Select,
    Stmt,
    Store,
    Unary,
    Var,
    nodes,
)

if TYPE_CHECKING:
    from .opencl_c import OpenCLRenderer

VALUE_TYPES = {"float32": ("float", 4), "float64": ("double", 8), "int32": ("int", 4),
               "int64": ("long", 8)}
MASK = {4: "int", 8: "long"}  # the integer vector a comparison of N-byte lanes gives
WIDTHS = (2, 4, 8, 16)
# Streaming stores (Kernel.stream_stores): clang's non-temporal store builtin (PoCL and other
# clang-based OpenCL compilers), taken only where the address is aligned to the whole vector
# (x86's movnt faults otherwise), then a store fence at the kernel's end.
NT_STORE = "__builtin_nontemporal_store"
NT_FENCE = """#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#else
  mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
"""


class NoVector(Exception):
    """The loop is rendered as scalars."""


# ("uni", text, dtype): the same for every lane; ("aff", base): base + lane, an int64 index;
# ("vec", text, dtype, lane bytes): one value per lane (dtype "bool": a mask of that width)
Val = tuple


def exp_helper(w: int) -> str:
    """hw_expf (c99.py's EXPF as OpenCL C) on float<w>, lane by lane the same arithmetic."""
    f, u, i = f"float{w}", f"uint{w}", f"int{w}"
    return f"""static inline {f} hw_expf_v{w}({f} x) {{
  {u} lo = as_{u}(x < -104.0f), hi = as_{u}(x > 89.0f);
  {f} xc = as_{f}((as_{u}(x) & ~(lo | hi)) | (({u})as_uint(89.0f) & hi));
  const float magic = 12582912.0f;
  {f} t = xc * 1.44269504088896341f + magic;
  {f} n = t - magic;
  {u} ni = as_{u}(t) - as_uint(magic);
  {f} r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  {f} p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  {i} n1 = as_{i}(ni) >> 1;
  {u} n2 = ni - as_{u}(n1);
  {f} s1 = as_{f}((as_{u}(n1) + 127u) << 23);
  {f} s2 = as_{f}((n2 + 127u) << 23);
  return as_{f}(as_{u}(p * s1 * s2) & ~lo);
}}
"""


def minmax_helper(op: str, t: str, w: int) -> str:
    """hw_max_* / hw_min_* (NaN propagates: x when x is NaN, else the larger / smaller) on
    vectors: the scalar helper's choice per lane."""
    v, m = f"{t}{w}", f"{MASK[VALUE_TYPES_BY_C[t]]}{w}"
    cmp = ">=" if op == "max" else "<="
    return (f"static inline {v} hw_{op}_v{t[0]}{w}({v} x, {v} y) {{\n"
            f"  return select(y, x, ({m})((x {cmp} y) | (x != x)));\n}}\n")


VALUE_TYPES_BY_C = {"float": 4, "double": 8}


class Vectorizer:
    """Renders one vectorized loop with `r`'s expression printer for the scalar parts."""

    def __init__(self, r: OpenCLRenderer, w: int, var: str, base: str) -> None:
        self.r, self.w, self.var = r, w, var
        self.env: dict[str, Val] = {var: ("aff", base)}
        self.helpers: set[str] = set()
        self.streamed = 0  # non-temporal stores written (their temporaries' names)

    # ---- expressions ------------------------------------------------------------------------
    def widen(self, v: Val, dtype: str) -> str:
        """v as a vector of dtype (a uniform value broadcast)."""
        if v[0] == "vec":
            return v[1]
        if v[0] == "uni":
            return f"(({VALUE_TYPES[dtype][0]}{self.w})({v[1]}))"
        raise NoVector("an index used as a value")

    def value(self, e: Expr) -> Val:
        if not self._varies(e):
            return ("uni", self.r.expr(e), e.dtype)
        if isinstance(e, Var):
            return self.env[e.name]
        if isinstance(e, Load):
            idx = self.value(e.index)
            if idx[0] != "aff":
                raise NoVector("a load at another index than base + lane")
            if e.dtype not in VALUE_TYPES:
                raise NoVector(f"a load of {e.dtype}")
            if self.r.vector_allocs.get(e.buf) == self.w and idx[1] == "0":
                return ("vec", f"{e.buf}_v", e.dtype, VALUE_TYPES[e.dtype][1])
            return ("vec", f"vload{self.w}(0, {e.buf} + {idx[1]})", e.dtype,
                    VALUE_TYPES[e.dtype][1])
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Unary):
            a = self.value(e.a)
            if a[0] != "vec" or e.op not in ("neg", "not"):
                raise NoVector(f"unary {e.op}")
            if e.op == "not":
                return ("vec", f"(!{a[1]})", "bool", a[3])
            return ("vec", f"(-{a[1]})", e.dtype, a[3])
        if isinstance(e, Select):
            return self._select(e)
        if isinstance(e, Cast):
            a = self.value(e.a)
            if a[0] != "vec" or e.dtype not in VALUE_TYPES or a[2] not in VALUE_TYPES:
                raise NoVector(f"a cast to {e.dtype}")
            t, size = VALUE_TYPES[e.dtype]
            return ("vec", f"convert_{t}{self.w}({a[1]})", e.dtype, size)
        if isinstance(e, Call):
            return self._call(e)
        raise NoVector(f"expression {type(e).__name__}")

    def _varies(self, e: Expr) -> bool:
        stack, seen = [e], set()
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, Var) and x.name in self.env:
                return True
            if isinstance(x, Unary | Cast):
                stack.append(x.a)
            elif isinstance(x, Binary):
                stack += [x.a, x.b]
            elif isinstance(x, Select):
                stack += [x.cond, x.a, x.b]
            elif isinstance(x, Call):
                stack += list(x.args)
            elif isinstance(x, Load):
                stack.append(x.index)
        return False

    def _binary(self, e: Binary) -> Val:
        a, b = self.value(e.a), self.value(e.b)
        if "aff" in (a[0], b[0]):
            if e.op == "+" and {a[0], b[0]} == {"aff", "uni"}:
                aff, uni = (a, b) if a[0] == "aff" else (b, a)
                return ("aff", f"({aff[1]} + {uni[1]})")
            if e.op == "-" and a[0] == "aff" and b[0] == "uni":
                return ("aff", f"({a[1]} - {b[1]})")
            raise NoVector(f"index arithmetic {e.op}")
        dt = e.a.dtype
        if e.op in ("&&", "||"):
            if a[0] != "vec" or b[0] != "vec" or a[3] != b[3]:
                raise NoVector("a mask with a uniform condition or one of another width")
            return ("vec", f"({a[1]} {e.op} {b[1]})", "bool", a[3])
        if dt not in VALUE_TYPES or e.op in ("%", "min", "max", "&", "|", "^"):
            raise NoVector(f"binary {e.op} on {dt}")
        text = f"({a[1]} {e.op} {b[1]})"
        if e.op in COMPARISONS:
            return ("vec", text, "bool", VALUE_TYPES[dt][1])
        return ("vec", text, e.dtype, VALUE_TYPES[dt][1])

    def _select(self, e: Select) -> Val:
        c, a, b = self.value(e.cond), self.value(e.a), self.value(e.b)
        if e.dtype not in VALUE_TYPES:
            raise NoVector(f"a select of {e.dtype}")
        size = VALUE_TYPES[e.dtype][1]
        va, vb = self.widen(a, e.dtype), self.widen(b, e.dtype)
        if c[0] == "uni":
            return ("vec", f"({c[1]} ? {va} : {vb})", e.dtype, size)
        if c[0] != "vec" or c[3] != size:
            raise NoVector("a select whose mask has another width")
        return ("vec", f"select({vb}, {va}, {c[1]})", e.dtype, size)

    def _call(self, e: Call) -> Val:
        t = e.args[0].dtype
        args = [self.value(a) for a in e.args]
        if t not in ("float32", "float64"):
            raise NoVector(f"{e.fn} of {t}")
        size = VALUE_TYPES[t][1]
        vargs = [self.widen(a, t) for a in args]
        if e.fn == "exp" and t == "float32":
            name = f"hw_expf_v{self.w}"
            self.helpers.add(name)
        elif e.fn in ("fmax_nan", "fmin_nan"):
            name = f"hw_{e.fn[1:4]}_v{VALUE_TYPES[t][0][0]}{self.w}"
            self.helpers.add(name)
        else:
            name = self.r.math_name(e.fn, t)
            if name.startswith("hw_"):
                raise NoVector(f"{name} has no vector form")
        out_t = "bool" if e.fn in ("isnan", "isinf", "isfinite") else e.dtype
        return ("vec", f"{name}({', '.join(vargs)})", out_t, size)

    # ---- statements -------------------------------------------------------------------------
    def body(self, stmts: list[Stmt], pad: str) -> list[str]:
        out: list[str] = []
        for s in stmts:
            if isinstance(s, Let):
                v = self.value(s.value)
                name = s.var.name
                if v[0] == "uni":
                    out.append(f"{pad}const {self.r.ctype(s.var.dtype)} {name} = {v[1]};")
                elif v[0] == "aff":
                    out.append(f"{pad}const long {name} = {v[1]};")
                    self.env[name] = ("aff", name)
                else:
                    vt = MASK[v[3]] if v[2] == "bool" else VALUE_TYPES[v[2]][0]
                    out.append(f"{pad}const {vt}{self.w} {name} = {v[1]};")
                    self.env[name] = ("vec", name, v[2], v[3])
            elif isinstance(s, Store):
                idx = self.value(s.index)
                if idx[0] != "aff":
                    raise NoVector("a store at another index than base + lane")
                dt = s.value.dtype
                if dt not in VALUE_TYPES:
                    raise NoVector(f"a store of {dt}")
                val = self.widen(self.value(s.value), dt)
                if self.r.vector_allocs.get(s.buf) == self.w and idx[1] == "0":
                    out.append(f"{pad}{s.buf}_v = {val};")
                elif self.r.stream_stores and s.buf in self.r.global_outputs:
                    out += self._streamed(s.buf, idx[1], val, dt, pad)
                else:
                    out.append(f"{pad}vstore{self.w}({val}, 0, {s.buf} + {idx[1]});")
            else:
                raise NoVector(f"statement {type(s).__name__}")
        return out


    def _streamed(self, buf: str, idx: str, val: str, dt: str, pad: str) -> list[str]:
        """A non-temporal store of the vector where its address is aligned to its size."""
        t, size = VALUE_TYPES[dt]
        vt = f"{t}{self.w}"
        self.streamed += 1
        tmp, ptr = f"nt{self.streamed}", f"{buf} + {idx}"
        return [f"{pad}const {vt} {tmp} = {val};",
                f"{pad}if ((((ulong)({ptr})) & {self.w * size - 1}) == 0)",
                f"{pad}  {NT_STORE}({tmp}, (__global {vt} *)({ptr}));",
                f"{pad}else",
                f"{pad}  vstore{self.w}({tmp}, 0, {ptr});"]


def lanes(s: For) -> int | None:
    """W for a lane loop (constant extent W from 0), None for another loop."""
    if isinstance(s.start, Const) and s.start.value == 0 and isinstance(s.extent, Const) and \
            s.extent.value in WIDTHS and s.step == 1:
        return int(s.extent.value)
    return None


def block_width(s: For) -> int:
    """W for an element loop: 16 lanes of 4-byte values, 8 when it loads or stores wider
    ones."""
    exprs: list[Expr] = []
    for st in s.body:
        if isinstance(st, Store | Let):
            exprs.append(st.value)
    wide = any(isinstance(x, Load) and x.dtype in ("float64", "int64") for x in nodes(exprs))
    wide = wide or any(isinstance(st, Store) and st.value.dtype in ("float64", "int64")
                       for st in s.body)
    return 8 if wide else 16


def render_loop(r: OpenCLRenderer, s: For, level: int) -> list[str] | None:
    """The loop with vector types, or None (rendered as scalars)."""
    if s.step != 1:
        return None
    pad = "  " * level
    w = lanes(s)
    try:
        if w is not None:
            vec = Vectorizer(r, w, s.var.name, "0")
            lines = [pad + "{", *vec.body(s.body, pad + "  "), pad + "}"]
            r.vector_helpers |= {(h, w) for h in vec.helpers}
            return lines
        w = block_width(s)
        v = s.var.name
        vb = f"{v}_v"
        vec = Vectorizer(r, w, v, vb)
        body = vec.body(s.body, pad + "    ")
    except NoVector:
        return None
    r.vector_helpers |= {(h, w) for h in vec.helpers}
    start, end = r.expr(s.start), r._loop_end(s)
    tail: list[str] = []
    r.stmts(s.body, level + 2, tail)
    return [pad + "{",
            f"{pad}  const long {v}_lo = {start}, {v}_hi = {end};",
            f"{pad}  const long {v}_vend = {v}_lo + ({v}_hi - {v}_lo) / {w} * {w};",
            f"{pad}  for (long {vb} = {v}_lo; {vb} < {v}_vend; {vb} += {w}) {{",
            *body,
            pad + "  }",
            f"{pad}  for (long {v} = {v}_vend; {v} < {v}_hi; ++{v}) {{",
            *tail,
            pad + "  }",
            pad + "}"]


def helper_text(name: str) -> str:
    """The source of a vector helper named by Vectorizer (hw_expf_vW, hw_max_vfW, ...)."""
    if name.startswith("hw_expf_v"):
        return exp_helper(int(name[len("hw_expf_v"):]))
    op, rest = name[3:6], name[len("hw_max_v"):]
    t = {"f": "float", "d": "double"}[rest[0]]
    return minmax_helper(op, t, int(rest[1:]))
