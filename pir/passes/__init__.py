"""Passes over PIR programs: the PassManager (pipelines, timing, IR printing, verification),
the pattern rewriter and its greedy driver, the standard passes dce, cse, canonicalize,
constant_folding, decompose and lower_to_kernel, and fuse (the DRR fusions of
pir/passes/fusions.py)."""

from __future__ import annotations

from . import canonicalize, constant_folding, cse, dce, decompose, fusions, lower_to_kernel
from .manager import (
           Nested,
           Pass,
           PassError,
           PassManager,
           PassTiming,
           parse_pipeline,
           register_pass,
           registered_passes,
)
from .rewrite import (
           Listener,
           PatternRewriter,
           RewritePattern,
           apply_patterns_greedily,
           is_trivially_dead,
)

__all__ = [
           "Listener",
           "Nested",
           "Pass",
           "PassError",
           "PassManager",
           "PassTiming",
           "PatternRewriter",
           "RewritePattern",
           "apply_patterns_greedily",
           "canonicalize",
           "constant_folding",
           "cse",
           "dce",
           "decompose",
           "fusions",
           "is_trivially_dead",
           "lower_to_kernel",
           "parse_pipeline",
           "register_pass",
           "registered_passes",
]
