"""kernel: ops bound to a kernel after lowering (pir/passes/lower_to_kernel.py), run by the
executor (pir/executor.py, runtime/src/executor.h).

- kernel.phi_kernel runs the kernel `kernel_name` registered for (device_type, dtype) on the
  operands (a pd_op's flattened tensor inputs); `op_name` is the pd_op it serves (a cast or
  copy the dispatcher makes for it names that op too); `path` is how eager selection resolves
  it ("native", or "fallback": the counted CPU fallback); the kernel's attributes travel as
  `attr.<name>` (exactly the values eager passes to the kernel).
- kernel.view is a strided view of its operand's memory (shape, strides and offset in
  elements, the operand contiguous from offset 0): no kernel runs.
- kernel.codegen_launch launches a compiled kernel (a CodegenFunction, hwport/codegen.h) with
  a fixed grid and group: operands are its inputs (given contiguous), results its outputs
  (fresh contiguous memory the kernel writes, never over an input). The function, grid, group
  and argument order live in pir/codegen_functions.py's registry under `function_id`."""

from __future__ import annotations

from ..core import Operation
from ..dialect import PURE, AttrSpec, Dialect, OperandSpec, OpInfo, lookup_op, register_dialect

DIALECT = register_dialect(Dialect("kernel"))


def _verify_phi_kernel(op: Operation) -> list[str]:
    name = op.attr("op_name")
    if not isinstance(name, str) or lookup_op(f"pd_op.{name}") is None:
        return [f"op_name {name!r} is not an op of pd_op"]
    return []


def _verify_view(op: Operation) -> list[str]:
    shape, strides = op.attr("shape"), op.attr("strides")
    if len(shape) != len(strides):
        return [f"shape {shape} and strides {strides} differ in length"]
    got = op.results[0].type if op.num_results == 1 else None
    if got is None or list(got.shape) != list(shape):
        return [f"the result type must have shape {shape}, got {got}"]
    if op.operand(0) is not None and got.dtype != op.operand(0).type.dtype:
        return [f"a view keeps the dtype {op.operand(0).type.dtype}, got {got.dtype}"]
    return []


DIALECT.register(OpInfo(
    "kernel.phi_kernel", operands=None, results=None,
    attrs=(AttrSpec("op_name", "str"), AttrSpec("kernel_name", "str"),
           AttrSpec("device_type", "str"), AttrSpec("dtype", "dtype")),
    extra_attrs=True, verify=_verify_phi_kernel))
def _verify_codegen_launch(op: Operation) -> list[str]:
    from .. import codegen_functions

    try:
        launch = codegen_functions.lookup(op.attr("function_id"))
    except KeyError as e:
        return [str(e.args[0])]
    return launch.problems(op.num_operands, op.num_results)


DIALECT.register(OpInfo(
    "kernel.codegen_launch", operands=None, results=None,
    attrs=(AttrSpec("function_id", "int"),), verify=_verify_codegen_launch))
DIALECT.register(OpInfo(
    "kernel.view", operands=(OperandSpec("x"),), results=(OperandSpec("out"),),
    attrs=(AttrSpec("shape", "ints"), AttrSpec("strides", "ints"), AttrSpec("offset", "int")),
    traits=frozenset({PURE}), verify=_verify_view))
