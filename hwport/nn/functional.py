"""The nn ops of the op library (those marked `nn: true` in phi_ops/ops.yaml)."""

from __future__ import annotations

from hwport.phi_ops import functional as _functional

__all__ = list(_functional.NN_FUNCTIONS)

globals().update({name: getattr(_functional, name) for name in __all__})
