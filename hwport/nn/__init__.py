"""hwport.nn: neural-network building blocks (functional forms for now)."""

from __future__ import annotations

from hwport.nn import functional

# ---- gradient clipping (hwport/nn/clip.py; optimizers' grad_clip=) ----
from hwport.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "functional"]
