"""Every public signature of hwport.optimizer, hwport.optimizer.lr and the ClipGradBy* classes
is Paddle 3.x's (names, order, kinds, defaults), as recorded from real Paddle in
data/paddle_signatures.json by paddle_golden.py."""

from __future__ import annotations

import importlib
import inspect

import pytest

from tests.optimizer.standin import signatures

SIG = signatures()
MODULES = {"optimizer": "hwport.optimizer", "optimizer.lr": "hwport.optimizer.lr",
           "nn": "hwport.nn.clip"}


def _resolve(dotted: str):
    mod, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(MODULES[mod]), attr)


def _ours(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        out.append({"name": p.name, "kind": p.kind.name,
                    "required": p.default is inspect.Parameter.empty, "default": default})
    return out


def test_recorded_from_paddle_3():
    assert SIG["version"].startswith("3.")


@pytest.mark.parametrize("key", sorted(SIG["classes"]))
def test_constructor(key):
    assert _ours(_resolve(key).__init__) == SIG["classes"][key]


@pytest.mark.parametrize("key", sorted(SIG["methods"]))
def test_method(key):
    cls_path, _, method = key.rpartition(".")
    assert _ours(getattr(_resolve(cls_path), method)) == SIG["methods"][key]
