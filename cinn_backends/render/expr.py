"""The expression and statement printer every C-like dialect shares. A dialect (c99.py,
opencl_c.py, cuda_c.py) supplies its type names, how a function of the IR's math library is
spelled for a dtype, its loop/thread/barrier forms, the kernel signature and the prelude of
helpers the kernels call (only those they use, so sources stay small and deterministic).

The IR's math library (FUNCTIONS): the names ops.yaml's c_expr/native strings call, plus the
helpers op_exprs.OVERRIDES names. Semantics are the CPU plugin's (elementwise_math.h):
fmax_nan/fmin_nan propagate NaN; floor_divide/remainder follow Python (numpy's divmod for
floats; an integer division by zero gives 0); sign keeps NaN; integer pow is exact and wraps;
floor/ceil/nearbyint are identities on integers; isnan/isinf are false on integers."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..analysis import combine
from ..loop_ir import (
    COMPARISONS,
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
    is_float,
    kernel_calls,
    nodes,
    stmt_exprs,
    walk,
)

FUNCTIONS = {
    "fabs": 1, "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "sqrt": 1, "sin": 1, "cos": 1,
    "tanh": 1, "erf": 1, "floor": 1, "ceil": 1, "nearbyint": 1, "isnan": 1, "isinf": 1,
    "isfinite": 1, "pow": 2, "fmax_nan": 2, "fmin_nan": 2, "floor_divide": 2, "remainder": 2,
    "sign": 1, "bitwise_not": 1,
}
MATH1 = ("exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tanh", "erf", "floor", "ceil",
         "nearbyint", "fabs")
SUFFIX = {"bool": "b", "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32",
          "int64": "i64", "float32": "f", "float64": "d"}
NARROW = ("int8", "uint8", "int16")
F2I_BOUNDS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class RenderError(ValueError):
    """The kernel uses something this dialect cannot express."""


class CLikeRenderer:
    dialect = ""
    options = ""
    ctypes: ClassVar[dict[str, str]] = {}
    inline = "static inline"
    # Renders ShuffleXor (shuffle_xor below) with a sub-group as wide as the target's
    # simd_width: the SIMT schedule emits shuffles only for such a renderer.
    shuffle = False

    # ---- hooks -----------------------------------------------------------------------------
    def math_name(self, fn: str, dtype: str) -> str:
        raise NotImplementedError

    def prelude(self, kernels: list[Kernel]) -> str:
        raise NotImplementedError

    def signature(self, k: Kernel) -> list[str]:
        raise NotImplementedError

    def bound_loop(self, s: For) -> str:
        raise NotImplementedError

    def barrier(self) -> str:
        raise RenderError(f"{self.dialect}: barriers need a SIMT target")

    def alloc_local(self, s: Alloc) -> str:
        raise RenderError(f"{self.dialect}: local memory needs a SIMT target")

    def shuffle_xor(self, value: str, mask: int) -> str:
        raise RenderError(f"{self.dialect}: no sub-group shuffles")

    def loop_pragma(self, s: For) -> list[str]:
        return []

    # ---- whole source ----------------------------------------------------------------------
    def render(self, kernels: list[Kernel]) -> str:
        parts = [self.prelude(kernels)]
        for k in kernels:
            parts.append(self.kernel(k))
        return "\n".join(parts)

    def kernel(self, k: Kernel) -> str:
        lines = self.signature(k)
        locals_ = [s for s in walk(k.body) if isinstance(s, Alloc) and s.scope == "local"]
        seen: set[str] = set()
        for s in locals_:
            if s.name not in seen:
                seen.add(s.name)
                lines.append("  " + self.alloc_local(s))
        self.stmts(k.body, 1, lines)
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ---- statements ------------------------------------------------------------------------
    def stmts(self, body: list[Stmt], level: int, out: list[str]) -> None:
        pad = "  " * level
        for s in body:
            if isinstance(s, For):
                if s.kind in ("parallel", "group", "thread"):
                    out.append(pad + self.bound_loop(s))
                    self.stmts(s.body, level, out)
                    continue
                out += [pad + p for p in self.loop_pragma(s)]
                v, t = s.var.name, self.ctypes["int64"]
                start = self.expr(s.start)
                end = self._loop_end(s)
                step = f"++{v}" if s.step == 1 else f"{v} += {s.step}"
                out.append(f"{pad}for ({t} {v} = {start}; {v} < {end}; {step}) {{")
                self.stmts(s.body, level + 1, out)
                out.append(pad + "}")
            elif isinstance(s, Store):
                out.append(f"{pad}{s.buf}[{self.expr(s.index)}] = {self.store_value(s)};")
            elif isinstance(s, Let):
                out.append(f"{pad}const {self.ctype(s.var.dtype)} {s.var.name} = "
                           f"{self.expr(s.value)};")
            elif isinstance(s, Local):
                out.append(f"{pad}{self.ctype(s.var.dtype)} {s.var.name} = {self.expr(s.init)};")
            elif isinstance(s, Assign):
                out.append(f"{pad}{s.var.name} = {self.expr(s.value)};")
            elif isinstance(s, Reduce):
                out.append(f"{pad}{s.var.name} = {self.expr(combine(s.op, s.var, s.value))};")
            elif isinstance(s, Alloc):
                if s.scope == "private":
                    out.append(f"{pad}{self.ctype(s.dtype)} {s.name}[{s.size}];")
            elif isinstance(s, Barrier):
                out.append(pad + self.barrier())
            elif isinstance(s, ShuffleXor):
                out.append(f"{pad}const {self.ctype(s.var.dtype)} {s.var.name} = "
                           f"{self.shuffle_xor(self.expr(s.value), s.mask)};")
            elif isinstance(s, If):
                out.append(f"{pad}if ({self.expr(s.cond)}) {{")
                self.stmts(s.then, level + 1, out)
                if s.orelse:
                    out.append(pad + "} else {")
                    self.stmts(s.orelse, level + 1, out)
                out.append(pad + "}")
            else:
                raise RenderError(f"unknown statement {s!r}")

    def _loop_end(self, s: For) -> str:
        if isinstance(s.extent, Binary) and s.extent.op == "-" and s.extent.b == s.start:
            return self.expr(s.extent.a)
        if isinstance(s.start, Const) and s.start.value == 0:
            return self.expr(s.extent)
        return f"({self.expr(s.start)} + {self.expr(s.extent)})"

    def store_value(self, s: Store) -> str:
        return self.expr(s.value)

    # ---- expressions -----------------------------------------------------------------------
    def ctype(self, dtype: str) -> str:
        return self.ctypes[dtype]

    def const(self, e: Const) -> str:
        v = e.value
        if e.dtype == "bool":
            return "1" if v else "0"
        if e.dtype == "float32":
            f = float(np.float32(v))
            if math.isnan(f):
                return "HW_NAN_F"
            if math.isinf(f):
                return "HW_INF_F" if f > 0 else "(-HW_INF_F)"
            return f"{f!r}f" if ("e" in repr(f) or "." in repr(f)) else f"{f!r}.0f"
        if e.dtype == "float64":
            f = float(v)
            if math.isnan(f):
                return "HW_NAN_D"
            if math.isinf(f):
                return "HW_INF_D" if f > 0 else "(-HW_INF_D)"
            text = repr(f)
            return text if ("e" in text or "." in text) else text + ".0"
        iv = int(v)
        if e.dtype == "int64":
            if -(2**31) < iv < 2**31:
                return str(iv) if iv >= 0 else f"({iv})"
            return f"(({self.ctype('int64')}){iv}LL)" if iv != -(2**63) else \
                f"(({self.ctype('int64')})(-9223372036854775807LL - 1))"
        return f"(({self.ctype(e.dtype)}){iv})"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return self.const(e)
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Load):
            text = f"{e.buf}[{self.expr(e.index)}]"
            return f"({text} != 0)" if e.dtype == "bool" else text
        if isinstance(e, Unary):
            a = self.expr(e.a)
            if e.op == "not" or (e.op == "bnot" and e.dtype == "bool"):
                return f"(!{a})"
            text = f"(-{a})" if e.op == "neg" else f"(~{a})"
            return self._wrap(text, e.dtype)
        if isinstance(e, Binary):
            a, b = self.expr(e.a), self.expr(e.b)
            if e.op in ("min", "max"):
                return f"HW_{e.op.upper()}({a}, {b})"
            text = f"({a} {e.op} {b})"
            return text if e.op in COMPARISONS else self._wrap(text, e.dtype)
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.a)} : {self.expr(e.b)})"
        if isinstance(e, Cast):
            return self.cast(e)
        if isinstance(e, Call):
            return self.call(e)
        raise RenderError(f"unknown expression {e!r}")

    def _wrap(self, text: str, dtype: str) -> str:
        if dtype in NARROW:
            return f"(({self.ctype(dtype)}){text})"
        if dtype == "bool":
            return f"({text} != 0)"
        return text

    def cast(self, e: Cast) -> str:
        src, dst = e.a.dtype, e.dtype
        a = self.expr(e.a)
        if src == "float16":
            a, src = f"hw_f16_to_f32({a})", "float32"
        elif src == "bfloat16":
            a, src = f"hw_bf16_to_f32({a})", "float32"
        if src == dst:
            return a
        if dst == "float16":
            return f"hw_f32_to_f16(({self.ctype('float32')})({a}))"
        if dst == "bfloat16":
            return f"hw_f32_to_bf16(({self.ctype('float32')})({a}))"
        if dst == "bool":
            return f"({a} != 0)"
        if is_float(src) and dst in F2I_BOUNDS:  # truncate, NaN -> 0, saturate
            return f"hw_f2i_{SUFFIX[dst]}_{SUFFIX[src]}({a})"
        return f"(({self.ctype(dst)})({a}))"

    def cast_helpers(self, kernels: list[Kernel]) -> list[str]:
        """The float -> integer conversions (cast's semantics) the kernels use."""
        pairs = sorted({(e.a.dtype if e.a.dtype not in ("float16", "bfloat16") else "float32",
                         e.dtype) for k in kernels
                        for e in nodes([x for s in walk(k.body) for x in stmt_exprs(s)])
                        if isinstance(e, Cast) and is_float(e.a.dtype)
                        and e.dtype in F2I_BOUNDS})
        out = []
        for src, dst in pairs:
            lo, hi = F2I_BOUNDS[dst]
            t, f = self.ctype(dst), self.ctype(src)
            lo_c, hi_c = self.const(Const(lo, dst)), self.const(Const(hi, dst))
            out.append(f"{self.inline} {t} hw_f2i_{SUFFIX[dst]}_{SUFFIX[src]}({f} x) {{\n"
                       f"  return x != x ? ({t})0 : x <= ({f}){float(lo)!r} ? {lo_c} : "
                       f"x >= ({f}){float(hi) + 1.0!r} ? {hi_c} : ({t})x;\n}}\n")
        return out

    def call(self, e: Call) -> str:
        if e.fn not in FUNCTIONS:
            raise RenderError(f"{self.dialect}: unknown function {e.fn!r}")
        t = e.args[0].dtype
        args = [self.expr(a) for a in e.args]
        if not is_float(t):
            if e.fn in ("floor", "ceil", "nearbyint"):
                return args[0]
            if e.fn in ("isnan", "isinf"):
                return "0"
            if e.fn == "isfinite":
                return "1"
            if e.fn == "bitwise_not":
                return f"(!{args[0]})" if t == "bool" else self._wrap(f"(~{args[0]})", t)
        return f"{self.math_name(e.fn, t)}({', '.join(args)})"


def used_dtypes(kernels: list[Kernel]) -> set[str]:
    """Every dtype a kernel's expressions or buffers have."""
    out: set[str] = set()
    for k in kernels:
        out |= {b.dtype for b in k.buffers}
        exprs = [e for s in walk(k.body) for e in stmt_exprs(s)]
        out |= {e.dtype for e in nodes(exprs)}
    return out


def used_calls(kernels: list[Kernel]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for k in kernels:
        out |= kernel_calls(k)
        for s in walk(k.body):
            if isinstance(s, Reduce) and s.op in ("max", "min"):
                out.add(("fmax_nan" if s.op == "max" else "fmin_nan", s.var.dtype))
    return out


# ---- helper templates (shared by the dialects; {T} type, {S} math suffix, {W} wide type,
# {INL} the dialect's inline keyword, {sfx} the IR dtype suffix) ------------------------------
FLOAT_HELPERS = {
    "fmax_nan": "{INL} {T} hw_max_{sfx}({T} x, {T} y) {{ return (x >= y || x != x) ? x : y; }}",
    "fmin_nan": "{INL} {T} hw_min_{sfx}({T} x, {T} y) {{ return (x <= y || x != x) ? x : y; }}",
    "sign": "{INL} {T} hw_sign_{sfx}({T} x) {{ return x > 0 ? ({T})1 : x < 0 ? ({T})-1 : "
            "x == 0 ? ({T})0 : x; }}",
    "pow": "{INL} {T} hw_ipow_{sfx}({T} x, {T} y) {{ return pow{S}(x, y); }}",
    "divmod": """{INL} {T} hw_divmod_{sfx}({T} a, {T} b, {T} *modulus) {{
  {T} mod = fmod{S}(a, b);
  if (b == 0) {{ *modulus = mod; return a / b; }}
  {T} div = (a - mod) / b;
  if (mod != 0) {{
    if ((b < 0) != (mod < 0)) {{ mod += b; div -= ({T})1; }}
  }} else {{
    mod = copysign{S}(({T})0, b);
  }}
  {T} fd;
  if (div != 0) {{
    fd = floor{S}(div);
    if (div - fd > ({T})0.5) fd += ({T})1;
  }} else {{
    fd = copysign{S}(({T})0, a / b);
  }}
  *modulus = mod;
  return fd;
}}""",
    "floor_divide": "{INL} {T} hw_floordiv_{sfx}({T} a, {T} b) {{ {T} m; "
                    "return hw_divmod_{sfx}(a, b, &m); }}",
    "remainder": "{INL} {T} hw_mod_{sfx}({T} a, {T} b) {{ {T} m; "
                 "(void)hw_divmod_{sfx}(a, b, &m); return m; }}",
}
INT_HELPERS = {
    "fabs": "{INL} {T} hw_abs_{sfx}({T} x) {{ return x < 0 ? ({T})(0u - ({W})x) : x; }}",
    "fmax_nan": "{INL} {T} hw_max_{sfx}({T} x, {T} y) {{ return x >= y ? x : y; }}",
    "fmin_nan": "{INL} {T} hw_min_{sfx}({T} x, {T} y) {{ return x <= y ? x : y; }}",
    "sign": "{INL} {T} hw_sign_{sfx}({T} x) {{ return ({T})((x > 0) - (x < 0)); }}",
    "floor_divide": """{INL} {T} hw_floordiv_{sfx}({T} x, {T} y) {{
  if (y == 0) return 0;
  if (y == -1) return ({T})(0u - ({W})x);
  {T} q = ({T})(x / y), r = ({T})(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? ({T})(q - 1) : q;
}}""",
    "remainder": """{INL} {T} hw_mod_{sfx}({T} x, {T} y) {{
  if (y == 0 || y == -1) return 0;
  {T} r = ({T})(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? ({T})(r + y) : r;
}}""",
    "pow": """{INL} {T} hw_ipow_{sfx}({T} b, {T} e) {{
  if (e < 0) return b == 1 ? ({T})1 : b == -1 ? ({T})((e & 1) ? -1 : 1) : ({T})0;
  {W} r = 1, base = ({W})b;
  for ({W} k = ({W})e; k != 0; k >>= 1) {{ if (k & 1u) r *= base; base *= base; }}
  return ({T})r;
}}""",
}
UNSIGNED_HELPERS = {
    **INT_HELPERS,
    "fabs": "{INL} {T} hw_abs_{sfx}({T} x) {{ return x; }}",
    "sign": "{INL} {T} hw_sign_{sfx}({T} x) {{ return ({T})(x > 0); }}",
    "floor_divide": "{INL} {T} hw_floordiv_{sfx}({T} x, {T} y) {{ return y == 0 ? ({T})0 : "
                    "({T})(x / y); }}",
    "remainder": "{INL} {T} hw_mod_{sfx}({T} x, {T} y) {{ return y == 0 ? ({T})0 : "
                 "({T})(x % y); }}",
    "pow": """{INL} {T} hw_ipow_{sfx}({T} b, {T} e) {{
  {W} r = 1, base = ({W})b;
  for ({W} k = ({W})e; k != 0; k >>= 1) {{ if (k & 1u) r *= base; base *= base; }}
  return ({T})r;
}}""",
}
BOOL_HELPERS = {
    "fabs": "{INL} int hw_abs_b(int x) {{ return x; }}",
    "fmax_nan": "{INL} int hw_max_b(int x, int y) {{ return x | y; }}",
    "fmin_nan": "{INL} int hw_min_b(int x, int y) {{ return x & y; }}",
    "sign": "{INL} int hw_sign_b(int x) {{ return x; }}",
    "floor_divide": "{INL} int hw_floordiv_b(int x, int y) {{ return x & y; }}",
    "remainder": "{INL} int hw_mod_b(int x, int y) {{ (void)x; (void)y; return 0; }}",
    "pow": "{INL} int hw_ipow_b(int x, int y) {{ return x | !y; }}",
}
HELPER_NAMES = {"fabs": "hw_abs", "fmax_nan": "hw_max", "fmin_nan": "hw_min", "sign": "hw_sign",
                "floor_divide": "hw_floordiv", "remainder": "hw_mod", "pow": "hw_ipow"}


def helper_source(calls: set[tuple[str, str]], ctype: dict[str, str], wide: dict[str, str],
                  suffix: dict[str, str], inline: str) -> list[str]:
    """The typed helpers `calls` need, in a fixed order."""
    out: list[str] = []
    for fn, dtype in sorted(calls):
        if fn not in HELPER_NAMES or (is_float(dtype) and fn == "fabs"):
            continue
        if is_float(dtype):
            table = FLOAT_HELPERS
            names = ["divmod", fn] if fn in ("floor_divide", "remainder") else [fn]
        elif dtype == "bool":
            table, names = BOOL_HELPERS, [fn]
        else:
            table = UNSIGNED_HELPERS if dtype.startswith("uint") else INT_HELPERS
            names = [fn]
        for name in names:
            text = table[name].format(T=ctype.get(dtype, "int"), S=suffix.get(dtype, ""),
                                      W=wide.get(dtype, ""), INL=inline, sfx=SUFFIX[dtype])
            if text not in out:
                out.append(text)
    return out
