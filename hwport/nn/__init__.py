"""hwport.nn: neural-network building blocks (functional forms for now)."""

from __future__ import annotations

from hwport.nn import functional

__all__ = ["functional"]
