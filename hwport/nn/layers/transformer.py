"""MultiHeadAttention with Paddle's signature and parameters (q_proj, k_proj, v_proj, out_proj:
Linear layers, weights [in, out]). Supported subset: query/key/value [batch, seq, dim],
attn_mask (bool: True keeps; float: added; broadcastable to [batch, heads, q_len, k_len]),
dropout on the attention weights while training, need_weights. Not supported: cache
(NotImplementedError)."""

from __future__ import annotations

from typing import Any

from hwport.nn.layer import Layer
from hwport.nn.layers.common import Linear, dropout
from hwport.phi_ops import functional as F
from hwport.runtime._core import Tensor

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(Layer):
    """softmax(q k^T / sqrt(head_dim) + mask) v over num_heads heads, then out_proj."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 kdim: int | None = None, vdim: int | None = None, need_weights: bool = False,
                 weight_attr: Any = None, bias_attr: Any = None) -> None:
        super().__init__()
        for arg, value in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"MultiHeadAttention: {arg} must be a positive int, got "
                                 f"{value!r}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1], got {dropout!r}")
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.num_heads = num_heads
        self.dropout = float(dropout)
        self.need_weights = bool(need_weights)
        self.head_dim = embed_dim // num_heads
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _heads(self, x: Tensor) -> Tensor:
        b, n = x.shape[0], x.shape[1]
        return F.transpose(F.reshape(x, [b, n, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def forward(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None,
                attn_mask: Tensor | None = None, cache: Any = None) -> Any:
        if cache is not None:
            raise NotImplementedError("MultiHeadAttention: cache is not supported (only None)")
        for arg, t in (("query", query), ("key", key), ("value", value)):
            if t is not None and (not isinstance(t, Tensor) or t.ndim != 3):
                raise ValueError(f"MultiHeadAttention: {arg} must be a 3-D Tensor [batch, "
                                 f"seq, dim], got {getattr(t, 'shape', type(t).__name__)}")
        key = query if key is None else key
        value = query if value is None else value
        q = self._heads(self.q_proj(query))
        k = self._heads(self.k_proj(key))
        v = self._heads(self.v_proj(value))
        mask = None
        if attn_mask is not None:
            mask = attn_mask
            if str(mask.dtype) != str(q.dtype):  # Paddle: bool/int masks -> (m - 1) * 1e9
                mask = F.multiply(F.subtract(F.cast(mask, dtype=q.dtype), 1.0), 1e9)
        use_dropout = self.training and self.dropout > 0
        if not use_dropout and not self.need_weights:
            out = F.scaled_dot_product_attention(q, k, v, mask)
            weights = None
        else:
            scores = F.multiply(F.matmul(q, k, transpose_y=True), self.head_dim ** -0.5)
            if mask is not None:
                scores = F.add(scores, mask)
            weights = F.softmax(scores, axis=-1)
            if use_dropout:
                weights = dropout(weights, self.dropout, training=True)
            out = F.matmul(weights, v)
        b, n = out.shape[0], out.shape[2]
        out = F.reshape(F.transpose(out, [0, 2, 1, 3]), [b, n, self.embed_dim])
        out = self.out_proj(out)
        return (out, weights) if self.need_weights else out
