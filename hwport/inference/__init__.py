"""hwport.inference: Paddle Inference's API over a jit.save artifact (`path.pir` +
`path.safetensors`), run on any place through the C++ executor.

    config = inference.Config("model")            # or Config("model.pir", "model.safetensors")
    config.enable_custom_device("opencl")          # or config.set_place("custom:opencl")
    predictor = inference.create_predictor(config)
    predictor.get_input_handle("x").copy_from_cpu(x)
    predictor.run()
    y = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    (y,) = predictor.run([x])                      # the plain form

With IR optimization on (the default, switch_ir_optim) the predictor runs the inference pass
pipeline on the loaded program first: decompose (the composites the place has no kernel for),
the DRR fusions, constant folding, canonicalize, CSE and DCE; the executor then plans memory
by liveness. `config.enable_cinn()` runs the fusion compiler's pipeline instead (every
composite decomposed, fusible ops grouped and compiled into generated kernels on places with a
codegen target: hwport.cinn_backends), as jit.to_static(backend="CINN") does."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hwport.runtime import Tensor, _core

INFERENCE_PASSES = "decompose{{place={place}}},fuse,constant_folding,canonicalize,cse,dce"
# enable_cinn: the loaded program is simplified; each plan (static shapes) then decomposes
# and fuses before its lowering, where the groups compile (hwport.cinn_backends)
CINN_INFERENCE_PASSES = "constant_folding,canonicalize,cse,dce"
CINN_PLAN_PASSES = "cinn_decompose,canonicalize,cse,dce,cinn_fusion,dce"


class Config:
    """Config(model_path_prefix) or Config(prog_file, params_file)."""

    def __init__(self, prog_file: str | None = None, params_file: str | None = None) -> None:
        from hwport.jit.serialization import PARAMS_SUFFIX, PROGRAM_SUFFIX

        if prog_file is not None and not isinstance(prog_file, str | os.PathLike):
            raise TypeError(f"Config: prog_file must be a path, got {type(prog_file).__name__}")
        self._prog_file: str | None = None
        self._params_file: str | None = None
        if prog_file is not None:
            prog = os.fspath(prog_file)
            if params_file is None:
                prefix = prog[:-len(PROGRAM_SUFFIX)] if prog.endswith(PROGRAM_SUFFIX) else prog
                prog, params_file = prefix + PROGRAM_SUFFIX, prefix + PARAMS_SUFFIX
            self.set_model(prog, os.fspath(params_file))
        self._place = "custom:cpu"
        self._ir_optim = True
        self._profile = False
        self._cinn = False

    def set_model(self, prog_file: str, params_file: str) -> None:
        self._prog_file, self._params_file = os.fspath(prog_file), os.fspath(params_file)

    def prog_file(self) -> str | None:
        return self._prog_file

    def params_file(self) -> str | None:
        return self._params_file

    def set_place(self, place: Any) -> None:
        """The device the predictor runs on ('custom:opencl', 'cpu', a Place)."""
        self._place = str(_core.resolve_place(place))

    def enable_custom_device(self, device_type: str, device_id: int = 0,
                             precision: Any = None) -> None:
        if precision is not None:
            raise ValueError("Config.enable_custom_device: only the model's own precision is "
                             f"supported, got precision={precision!r}")
        self.set_place(f"custom:{device_type}:{device_id}")

    def disable_gpu(self) -> None:
        self.set_place("custom:cpu")

    def place(self) -> str:
        return self._place

    def switch_ir_optim(self, x: bool = True) -> None:
        self._ir_optim = bool(x)

    def ir_optim(self) -> bool:
        return self._ir_optim

    def enable_cinn(self) -> None:
        """Compiles the program with the fusion compiler (with ir_optim on; HWPORT_CINN=0
        turns the compiler off everywhere)."""
        self._cinn = True

    def cinn_enabled(self) -> bool:
        return self._cinn

    def enable_profile(self) -> None:
        """Each run is timed by hwport.profiler as a "Predictor.run" event (the executor's
        instructions are not events yet); predictor.profiler holds the last run's."""
        self._profile = True

    def enable_memory_optim(self, x: bool = True) -> None:
        """Memory is always planned by liveness; accepted for Paddle's API."""

    def summary(self) -> str:
        return (f"prog_file: {self._prog_file}\nparams_file: {self._params_file}\n"
                f"place: {self._place}\nir_optim: {self._ir_optim}\n"
                f"cinn: {self._cinn}\nprofile: {self._profile}")


class InferTensor:
    """An input or output handle of a Predictor (Paddle's inference Tensor)."""

    def __init__(self, predictor: Predictor, name: str, is_input: bool) -> None:
        self._predictor = predictor
        self._name = name
        self._is_input = is_input

    def name(self) -> str:
        return self._name

    def reshape(self, shape: Any) -> None:
        """Accepted for Paddle's API: copy_from_cpu takes its array's shape."""

    def copy_from_cpu(self, data: Any) -> None:
        if not self._is_input:
            raise ValueError(f"copy_from_cpu: {self._name!r} is an output handle")
        arr = np.ascontiguousarray(np.asarray(data))
        place = _core.resolve_place(self._predictor._config.place())
        self._predictor._feeds[self._name] = _core.from_numpy(arr, place)

    def share_external_data(self, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"share_external_data: expected a Tensor, got "
                            f"{type(tensor).__name__}")
        self._predictor._feeds[self._name] = tensor

    def _tensor(self) -> Tensor:
        table = self._predictor._feeds if self._is_input else self._predictor._outputs
        t = table.get(self._name)
        if t is None:
            what = "copy_from_cpu first" if self._is_input else "run the predictor first"
            raise RuntimeError(f"{self._name!r} holds no data yet ({what})")
        return t

    def copy_to_cpu(self) -> np.ndarray:
        return self._tensor().numpy()

    def shape(self) -> list[int]:
        return list(self._tensor().shape)

    def type(self) -> Any:
        return self._tensor().dtype


class Predictor:
    def __init__(self, config: Config) -> None:
        from hwport.jit.serialization import ProgramRunner, read_files

        if config.prog_file() is None:
            raise ValueError("create_predictor: the Config names no model (Config(path) or "
                             "config.set_model(prog_file, params_file))")
        self._config = config
        program, params = read_files(config.prog_file(), config.params_file())
        plan_passes = ""
        if config.ir_optim():
            from hwport.pir.passes import PassManager

            passes = INFERENCE_PASSES.format(place=config.place())
            if config.cinn_enabled():
                from hwport.cinn_backends import compile as cinn_compile
                from hwport.cinn_backends import register

                if cinn_compile.enabled():
                    register()
                    passes, plan_passes = CINN_INFERENCE_PASSES, CINN_PLAN_PASSES
            PassManager(passes).run(program)
        self._runner = ProgramRunner(program, params, plan_passes)
        self._runner.executor(config.place())  # parameters on the device now, not per run
        self._feeds: dict[str, Tensor] = {}
        self._outputs: dict[str, Tensor] = {}
        self.profiler: Any = None

    @property
    def program(self) -> Any:
        return self._runner.program

    def get_input_names(self) -> list[str]:
        return list(self._runner.input_names)

    def get_output_names(self) -> list[str]:
        return list(self._runner.output_names)

    def _handle(self, name: str, names: list[str], is_input: bool) -> InferTensor:
        if name not in names:
            kind = "input" if is_input else "output"
            raise KeyError(f"get_{kind}_handle: no {kind} named {name!r}; the model's "
                           f"{kind}s are {names}")
        return InferTensor(self, name, is_input)

    def get_input_handle(self, name: str) -> InferTensor:
        return self._handle(name, self._runner.input_names, True)

    def get_output_handle(self, name: str) -> InferTensor:
        return self._handle(name, self._runner.output_names, False)

    def run(self, inputs: list[Any] | None = None) -> Any:
        """run(): from the input handles into the output handles (True). run([x, ...]): the
        inputs in get_input_names() order (Tensors or arrays); returns the output Tensors."""
        if inputs is None:
            missing = [n for n in self._runner.input_names if n not in self._feeds]
            if missing:
                raise RuntimeError(f"Predictor.run: no data for input(s) {missing} "
                                   "(get_input_handle(name).copy_from_cpu(array))")
            outs = self._run([self._feeds[n] for n in self._runner.input_names])
            self._outputs = dict(zip(self._runner.output_names, outs, strict=True))
            return True
        if not isinstance(inputs, list | tuple):
            raise TypeError(f"Predictor.run: inputs must be a list, got "
                            f"{type(inputs).__name__}")
        return list(self._run(list(inputs)))

    def _run(self, inputs: list[Any]) -> list[Tensor]:
        place = self._config.place()
        if not self._config._profile:
            return self._runner.run(inputs, place)
        from hwport import profiler

        with profiler.Profiler() as prof, profiler.RecordEvent("Predictor.run"):
            outs = self._runner.run(inputs, place)
        self.profiler = prof
        return outs

    def clone(self) -> Predictor:
        return Predictor(self._config)


def create_predictor(config: Config) -> Predictor:
    if not isinstance(config, Config):
        raise TypeError(f"create_predictor: expected an inference.Config, got "
                        f"{type(config).__name__}")
    return Predictor(config)


__all__ = ["Config", "InferTensor", "Predictor", "create_predictor"]
