"""hwport.static: what captured programs are described with (InputSpec) and the control flow
that works both eagerly and inside a capture (static.nn.cond, static.nn.while_loop)."""

from __future__ import annotations

from . import nn
from .input_spec import InputSpec

__all__ = ["InputSpec", "nn"]
