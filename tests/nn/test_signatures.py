"""The public functions and classes of the nn work have Paddle 3.3.1's signatures: parameter
names, order, kinds and defaults (recorded from real Paddle in paddle_signatures.py)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import hwport
import hwport.nn as nn
from tests.nn.paddle_signatures import PADDLE_SIGNATURES


def _resolve(key: str) -> Any:
    obj: Any = hwport
    parts = key.split(".")
    for part in parts:
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        obj = obj.__init__
    return obj


def _params(fn: Any) -> list[tuple[str, str, Any]]:
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        default = "REQ" if p.default is inspect.Parameter.empty else p.default
        out.append((p.name, p.kind.name, default))
    return out


# hwport's keyword-only additions after Paddle's parameters (the op's Philox stream).
EXTRAS = {"nn.functional.dropout": [("seed", "KEYWORD_ONLY", None),
                                    ("offset", "KEYWORD_ONLY", None)]}


@pytest.mark.parametrize("key", sorted(PADDLE_SIGNATURES))
def test_signature_matches_paddle(key: str) -> None:
    assert _params(_resolve(key)) == PADDLE_SIGNATURES[key] + EXTRAS.get(key, []), key


def test_composite_cross_entropy_has_paddles_signature() -> None:
    from hwport.nn.loss import cross_entropy

    want = PADDLE_SIGNATURES["nn.functional.cross_entropy"]
    assert _params(cross_entropy) == want


def test_paramattr_is_also_in_nn() -> None:
    assert nn.ParamAttr is hwport.ParamAttr
