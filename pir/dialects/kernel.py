"""kernel: ops bound to a kernel after lowering (a skeleton: the lowering pass and the
executor come later). kernel.phi_kernel runs pd_op `op_name` with the kernel registered for
(device_type, dtype); the pd_op's own attributes travel with it."""

from __future__ import annotations

from ..core import Operation
from ..dialect import AttrSpec, Dialect, OpInfo, lookup_op, register_dialect

DIALECT = register_dialect(Dialect("kernel"))


def _verify_phi_kernel(op: Operation) -> list[str]:
    name = op.attr("op_name")
    if not isinstance(name, str) or lookup_op(f"pd_op.{name}") is None:
        return [f"op_name {name!r} is not an op of pd_op"]
    return []


DIALECT.register(OpInfo(
    "kernel.phi_kernel", operands=None, results=None,
    attrs=(AttrSpec("op_name", "str"), AttrSpec("kernel_name", "str"),
           AttrSpec("device_type", "str"), AttrSpec("dtype", "dtype")),
    extra_attrs=True, verify=_verify_phi_kernel))
