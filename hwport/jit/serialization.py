"""jit.save / jit.load: a captured program as the inference artifact.

`save(layer, path, input_spec)` captures the layer's forward (in its current training mode,
without gradients) for the specs (None / -1 dims stay symbolic) and writes `path.pir` (the
program's text format, pd_op ops after the passes) and `path.safetensors` (the parameters by
the names the program's builtin.parameter ops use). `load(path)` reads both back into a
TranslatedLayer that runs the program on the place of its inputs."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hwport.runtime import Tensor, _core

PROGRAM_SUFFIX = ".pir"
PARAMS_SUFFIX = ".safetensors"


def _specs_of(layer: Any, input_spec: Any) -> list[Any]:
    from hwport.static import InputSpec

    from .static_function import StaticFunction

    if input_spec is None:
        forward = getattr(layer, "forward", layer)
        input_spec = forward.input_spec if isinstance(forward, StaticFunction) else None
    if not input_spec:
        raise ValueError("jit.save: give input_spec (a list of hwport.static.InputSpec, one "
                         "per tensor argument of forward), or save a layer whose forward was "
                         "decorated with to_static(input_spec=...)")
    specs = [InputSpec.from_tensor(s) if isinstance(s, Tensor) else s for s in input_spec]
    for i, spec in enumerate(specs):
        if not isinstance(spec, InputSpec):
            raise TypeError(f"jit.save: input_spec[{i}] must be an InputSpec or a Tensor, got "
                            f"{type(spec).__name__}")
    return specs


def save(layer: Any, path: str, input_spec: Any = None, **configs: Any) -> None:
    """Writes `path.pir` and `path.safetensors` (Paddle's jit.save(layer, path, input_spec))."""
    from hwport import autograd
    from hwport import save as save_tensors
    from hwport.nn import Layer
    from hwport.pir import print_program

    from .static_function import StaticFunction

    if not isinstance(path, str | os.PathLike) or not os.fspath(path):
        raise TypeError(f"jit.save: path must be a non-empty file path prefix, got {path!r}")
    specs = _specs_of(layer, input_spec)
    if isinstance(layer, Layer):
        forward = layer.forward
        fn = forward.dygraph_function if isinstance(forward, StaticFunction) else \
            type(layer).forward
        sf = StaticFunction(fn, specs, full_graph=True, layer=layer)
    elif isinstance(layer, StaticFunction):
        sf = StaticFunction(layer.dygraph_function, specs, full_graph=True)
    elif callable(layer):
        sf = StaticFunction(layer, specs, full_graph=True)
    else:
        raise TypeError(f"jit.save: expected an nn.Layer or a function, got "
                        f"{type(layer).__name__}")
    place = configs.pop("place", None)
    if configs:
        raise TypeError(f"jit.save: unexpected option(s) {sorted(configs)}")
    device = _core.resolve_place(place)
    # example inputs: zeros of the specs' shapes (a symbolic dim at 2)
    inputs = [_core.full([2 if d == -1 else d for d in s.shape], 0, s.dtype, device)
              for s in specs]
    with autograd.no_grad():
        sf(*inputs)
    entry = next(iter(sf._cache.values()))
    if entry.specialized is not None:
        raise ValueError("jit.save: the forward reads the size of a symbolic dim into an "
                         "attribute, so no one program serves every size; declare that dim "
                         "static in input_spec")
    if entry.eager_reason is not None:
        raise ValueError(f"jit.save: the forward cannot be one program: {entry.eager_reason}")
    collectives = sorted({op.name for op in entry.program.block.ops
                          if op.name.startswith("dist.")})
    if collectives:
        raise ValueError(f"jit.save: the forward runs collectives ({', '.join(collectives)}) on "
                         "communicators that exist only in this process; save the layer "
                         "without its distributed calls (e.g. its local shard's forward)")
    prefix = os.fspath(path)
    folder = os.path.dirname(prefix)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(prefix + PROGRAM_SUFFIX, "w", encoding="utf-8") as f:
        f.write(print_program(entry.program, locations=False))
    save_tensors({name: t for name, t in entry.params.items()}, prefix + PARAMS_SUFFIX)


def read_artifact(path: str) -> tuple[Any, dict[str, Any]]:
    """(the program, its parameters as numpy arrays by name) of a jit.save artifact."""
    prefix = os.fspath(path)
    return read_files(prefix + PROGRAM_SUFFIX, prefix + PARAMS_SUFFIX)


def read_files(prog_file: str, params_file: str) -> tuple[Any, dict[str, Any]]:
    from hwport import load as load_tensors
    from hwport.pir import parse

    for f in (prog_file, params_file):
        if not os.path.isfile(f):
            raise FileNotFoundError(f"no such file {f!r} (jit.save writes {PROGRAM_SUFFIX} "
                                    f"and {PARAMS_SUFFIX} next to each other)")
    with open(prog_file, encoding="utf-8") as f:
        program = parse(f.read())
    return program, load_tensors(params_file, return_numpy=True)


class ProgramRunner:
    """A loaded program with its parameters, run on any place (an executor per place)."""

    def __init__(self, program: Any, params: dict[str, Any], passes: str = "") -> None:
        self._passes = passes  # run per plan before lowering (pir.Executor's `passes`)
        self.program = program
        self.params = params
        self.input_names = [op.attr("name") for op in program.block.ops
                            if op.name == "builtin.data"]
        self.output_names = [op.attr("output_name") for op in program.block.ops
                             if op.name == "builtin.shadow_output"]
        self._executors: dict[str, Any] = {}

    def executor(self, place: Any) -> Any:
        from hwport.pir import Executor

        place = _core.resolve_place(place)
        exe = self._executors.get(str(place))
        if exe is None:
            # a tensor already on the place is bound as it is (its updates are seen); others
            # are copied there once
            bound = {n: a if isinstance(a, Tensor) and a.place == place else
                     _core.from_numpy(a if isinstance(a, np.ndarray) else a.numpy(), place)
                     for n, a in self.params.items()}
            exe = self._executors[str(place)] = Executor(self.program, place, bound,
                                                                passes=self._passes)
        return exe

    def run(self, inputs: list[Any], place: Any = None) -> list[Any]:
        if len(inputs) != len(self.input_names):
            raise ValueError(f"the program takes {len(self.input_names)} input(s) "
                             f"{self.input_names}, got {len(inputs)}")
        if place is None:
            place = next((t.place for t in inputs if isinstance(t, Tensor)), None)
        tensors = [t if isinstance(t, Tensor) else _core.from_numpy(t, _core.resolve_place(
            place)) for t in inputs]
        return self.executor(place).run(dict(zip(self.input_names, tensors, strict=True)))


def _layer_base() -> type:
    from hwport.nn import Layer

    return Layer


class TranslatedLayer(_layer_base()):  # type: ignore[misc]
    """What jit.load returns: a layer whose forward runs the saved program on its inputs'
    place (one tensor out, or a list). Its parameters are the program's, by their saved names
    (`named_parameters`, `state_dict`), on the current device; the program is for inference,
    so they are not trainable (stop_gradient=True)."""

    def __init__(self, runner: ProgramRunner) -> None:
        from hwport.nn.parameter import Parameter

        super().__init__()
        device = _core.resolve_place(None)
        for name, value in list(runner.params.items()):
            param = Parameter(_core.from_numpy(value, device), name=name, trainable=False)
            self._parameters[name] = param
            runner.params[name] = param
        self._runner = runner
        self.eval()

    @property
    def program(self) -> Any:
        return self._runner.program

    def forward(self, *inputs: Any) -> Any:
        outs = self._runner.run(list(inputs))
        return outs[0] if len(outs) == 1 else list(outs)


def load(path: str, **configs: Any) -> TranslatedLayer:
    """Reads what jit.save wrote (Paddle's jit.load(path))."""
    if configs:
        raise TypeError(f"jit.load: unexpected option(s) {sorted(configs)}")
    program, params = read_artifact(path)
    return TranslatedLayer(ProgramRunner(program, params))
