"""The nn ops of the op library (those marked `nn: true` in phi_ops/ops.yaml)."""

from __future__ import annotations

from hwport.phi_ops import functional as _functional

__all__ = list(_functional.NN_FUNCTIONS)

globals().update({name: getattr(_functional, name) for name in __all__})

# ---- losses and the seeded dropout (hwport/nn/loss.py, hwport/nn/layers/common.py) ---------
# Paddle's loss functions, composed of library ops; dropout draws (seed, offset) from
# hwport.seed's generator unless given them. cross_entropy is hwport.nn.loss's: the op
# (hwport.cross_entropy) with soft labels, weight, label_smoothing, use_softmax and labels of
# shape [..., 1] added, as Paddle's F.cross_entropy has them.
from hwport.nn.layers.common import dropout  # noqa: E402, F401
from hwport.nn.loss import (  # noqa: E402
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
)

__all__ += ["binary_cross_entropy_with_logits", "l1_loss", "mse_loss"]
