"""hwport.pir: the SSA IR. Types (tensor with static or symbolic dims, vector), attributes,
operations, values with use-def chains, blocks, regions and programs; dialects (builtin,
pd_op generated from phi_ops/ops.yaml, cf, kernel); InferMeta on symbolic shapes; the
verifier; the text format (printer and parser); the Builder. See docs/pir.md."""

from __future__ import annotations

from .attributes import (
    NULL,
    ArrayAttr,
    Attribute,
    BoolAttr,
    DoubleAttr,
    DTypeAttr,
    Int64Attr,
    NullAttr,
    PlaceAttr,
    StrAttr,
    attr,
)
from .builder import Builder
from .core import (
    Block,
    BlockArgument,
    IRError,
    Location,
    Operation,
    OpOperand,
    OpResult,
    Region,
    Value,
)
from .dialect import Dialect, OpInfo, all_dialects, lookup_op, register_dialect
from .executor import Executor
from .infer import InferMetaError, infer_result_types
from .parser import ParseError, parse
from .printer import print_program
from .program import Program
from .symbolic import UNKNOWN, Constraint, Constraints, SymExpr, sym
from .types import TensorType, Type, VectorType, tensor
from .verifier import VerificationError, verify

__all__ = [
    "NULL", "UNKNOWN", "ArrayAttr", "Attribute", "Block", "BlockArgument", "BoolAttr",
    "Builder", "Constraint", "Constraints", "DTypeAttr", "Dialect", "DoubleAttr", "Executor",
    "IRError", "InferMetaError", "Int64Attr", "Location", "NullAttr", "OpInfo", "OpOperand",
    "OpResult",
    "Operation", "ParseError", "PlaceAttr", "Program", "Region", "StrAttr", "SymExpr",
    "TensorType", "Type", "Value", "VectorType", "VerificationError", "all_dialects", "attr",
    "infer_result_types", "lookup_op", "parse", "print_program", "register_dialect", "sym",
    "tensor", "verify",
]
