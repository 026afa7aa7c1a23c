"""hwport.phi_ops: the op library. ops.yaml is the single source of truth; this package loads
it (schema), infers output shapes and dtypes (infer_meta), decomposes composites into
primitives (decompositions), and holds the numpy reference semantics (reference)."""

from __future__ import annotations

from .schema import OpDef, load_ops, primitives

__all__ = ["OpDef", "load_ops", "primitives"]
