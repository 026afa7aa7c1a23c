"""Every op of the op library (phi_ops/ops.yaml) as a function: hwport.ops.exp(x), ..."""

from __future__ import annotations

from hwport.phi_ops.functional import *  # noqa: F403
from hwport.phi_ops.functional import OP_NAMES

__all__ = list(OP_NAMES)
