"""The open registry of renderers by dialect. hwport registers c99, opencl-c-1.2 and
cuda-c++17; a vendor adds its own dialect without editing hwport, either by calling
register_renderer or through an entry point of the group `hwport.codegen_targets` whose object
is a renderer (or a zero-argument callable returning one), named by its dialect:

    [project.entry-points."hwport.codegen_targets"]
    "acme-c" = "acme_hwport.codegen:AcmeRenderer"

A renderer has `dialect`, `options` (the default compile options; an optional
`options_for(target_info) -> str` refines them per target) and
`render(kernels: list[loop_ir.Kernel]) -> str`; render/expr.py's CLikeRenderer does most of
the work for C-like dialects. A broken entry point is reported (entry_point_errors()) and
skipped, never raised."""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any, Protocol

from .loop_ir import Kernel

ENTRY_POINT_GROUP = "hwport.codegen_targets"


class Renderer(Protocol):
    dialect: str
    options: str

    def render(self, kernels: list[Kernel]) -> str: ...


_LOCK = threading.Lock()
_RENDERERS: dict[str, Renderer] = {}
_ERRORS: dict[str, str] = {}
_STATE = {"discovered": False}


def register_renderer(dialect: str, renderer: Renderer) -> None:
    """Make `renderer` the one for `dialect` (replacing any earlier one)."""
    if not isinstance(dialect, str) or not dialect:
        raise ValueError("a dialect is a non-empty string")
    if not callable(getattr(renderer, "render", None)):
        raise TypeError(f"renderer for {dialect!r} has no render(kernels) method")
    with _LOCK:
        _RENDERERS[dialect] = renderer


def _builtin() -> None:
    from .render.c99 import C99Renderer
    from .render.cuda_c import CudaRenderer
    from .render.opencl_c import OpenCLRenderer

    for r in (C99Renderer(), OpenCLRenderer(), CudaRenderer()):
        _RENDERERS.setdefault(r.dialect, r)


def _discover() -> None:
    with _LOCK:
        if _STATE["discovered"]:
            return
        _STATE["discovered"] = True
        _builtin()
    try:
        eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    except Exception as e:  # noqa: BLE001 - a broken environment must not break compiling
        _ERRORS["<entry points>"] = f"{type(e).__name__}: {e}"
        return
    for ep in sorted(eps, key=lambda e: e.name):
        try:
            obj: Any = ep.load()
            if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "render")):
                obj = obj()
            register_renderer(getattr(obj, "dialect", None) or ep.name, obj)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            _ERRORS[ep.name] = f"{type(e).__name__}: {e}"


def renderer_for(dialect: str) -> Renderer:
    """The renderer of `dialect`; KeyError naming the known ones when there is none."""
    _discover()
    with _LOCK:
        r = _RENDERERS.get(dialect)
        known = sorted(_RENDERERS)
    if r is None:
        raise KeyError(f"no renderer for dialect {dialect!r}; known: {', '.join(known)}")
    return r


def dialects() -> list[str]:
    _discover()
    with _LOCK:
        return sorted(_RENDERERS)


def entry_point_errors() -> dict[str, str]:
    """Entry points of hwport.codegen_targets that failed to load: name -> reason."""
    _discover()
    return dict(_ERRORS)


def rediscover() -> None:
    """Forget entry-point discovery (tests; after installing a package at run time)."""
    with _LOCK:
        _STATE["discovered"] = False
        _ERRORS.clear()
