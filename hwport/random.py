"""The global random generator: a Philox-4x32-10 (seed, offset) pair (phi_ops/philox.py).

Every random draw of the framework (initializers, dropout) asks the generator for a stretch
of counters: it gets the current (seed, offset) and the offset advances by the number of
counters the op consumes (`uniform` numel, `normal` 2 * numel, `dropout` numel). The random
ops compute element i from counter offset + i, so the numbers depend only on the seed and on
the sequence of draws, never on the device: `hwport.seed(n)` gives the same parameters and the
same dropout masks on custom:cpu, custom:opencl or any other plugin."""

from __future__ import annotations

import math
import os
import threading
from typing import Any

__all__ = ["Generator", "default_generator", "get_rng_state", "normal", "seed", "set_rng_state",
           "uniform"]

_MASK64 = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1


def _check_int(fn: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {arg} must be an int, got {type(value).__name__} {value!r}")
    return int(value.__index__())


class Generator:
    """A Philox stream: `seed` (a 64-bit key) and `offset` (the next unused 128-bit counter)."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._seed = 0
        self._offset = 0
        if seed is None:  # Paddle's unseeded default generator differs from run to run
            seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        """Restarts the stream: key `seed` (taken modulo 2**64), offset 0."""
        s = _check_int("seed", "seed", seed)
        with self._lock:
            self._seed = s & _MASK64
            self._offset = 0
        return self

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> tuple[int, int]:
        """(seed, offset): set_state of it replays the draws that follow."""
        with self._lock:
            return (self._seed, self._offset)

    def set_state(self, state: Any) -> None:
        try:
            seed_value, offset = state
        except (TypeError, ValueError):
            raise TypeError(f"set_rng_state: state must be a (seed, offset) pair as "
                            f"get_rng_state returns, got {state!r}") from None
        s = _check_int("set_rng_state", "seed", seed_value)
        o = _check_int("set_rng_state", "offset", offset)
        if not 0 <= o <= _INT64_MAX:
            raise ValueError(f"set_rng_state: offset must be in [0, 2**63 - 1], got {o}")
        with self._lock:
            self._seed, self._offset = s & _MASK64, o

    def draw(self, counters: int) -> tuple[int, int]:
        """Reserves `counters` counters: returns the (seed, offset) of the first, as the random
        ops' int64 attributes take them (the seed as a signed 64-bit value: the same key), and
        advances the offset past them."""
        n = _check_int("Generator.draw", "counters", counters)
        if n < 0:
            raise ValueError(f"Generator.draw: counters must be >= 0, got {n}")
        with self._lock:
            seed_value, offset = self._seed, self._offset
            if offset + n > _INT64_MAX:
                raise OverflowError("the random generator's offset passed 2**63 - 1 (the "
                                    "random ops' int64 offset); reseed with hwport.seed(n)")
            self._offset = offset + n
        return (seed_value - (1 << 64) if seed_value > _INT64_MAX else seed_value), offset

    def draw_for(self, counters: int, fn: Any) -> Any:
        """fn(seed, offset) on the stretch draw(counters) would reserve; the offset advances
        only when fn returns (a call its op refuses leaves the stream where it was)."""
        with self._lock:
            seed_value, offset = self._seed, self._offset
            if offset + counters > _INT64_MAX:
                raise OverflowError("the random generator's offset passed 2**63 - 1 (the "
                                    "random ops' int64 offset); reseed with hwport.seed(n)")
            out = fn(seed_value - (1 << 64) if seed_value > _INT64_MAX else seed_value, offset)
            self._offset = offset + counters
            return out

    def __repr__(self) -> str:
        return f"hwport.random.Generator(seed={self._seed}, offset={self._offset})"


default_generator = Generator()


def seed(seed: int) -> Generator:
    """Seeds the global generator (Paddle's `paddle.seed`): every later initializer and dropout
    draws the same numbers on every device. Returns the generator."""
    return default_generator.manual_seed(seed)


def _check_device(fn: str, device: Any) -> None:
    """Paddle's `device=` of the rng-state functions: None (the current device) or a place.
    One generator serves every device (the numbers do not depend on it), so a valid place
    selects that same generator; an unknown one is refused as everywhere else."""
    if device is None:
        return
    from hwport.runtime import _core

    try:
        _core.resolve_place(device)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{fn}: device: {e}") from None


def get_rng_state(device: Any = None) -> tuple[int, int]:
    """The global generator's (seed, offset). Paddle's signature; `device` (None or a place
    such as 'custom:opencl') is checked, and the one generator every device shares answers
    (Paddle returns a list of per-device generator states: pass the result back to
    set_rng_state either way)."""
    _check_device("get_rng_state", device)
    return default_generator.get_state()


def set_rng_state(state_list: Any, device: Any = None) -> None:
    """Restores a state from get_rng_state() (Paddle's signature; `device` as there)."""
    _check_device("set_rng_state", device)
    default_generator.set_state(state_list)


# ---- the random ops with Paddle's seed=0: draw from the global generator ----------------

def _numel(shape: Any) -> int | None:
    """The element count of a shape argument, None where it is not plainly one (the op then
    reports what is wrong with it)."""
    try:
        dims = [shape] if isinstance(shape, int) else [int(d) for d in shape]
    except (TypeError, ValueError):
        return None
    return math.prod(dims) if all(d >= 0 for d in dims) else None


def _seeded(op: Any, seed_value: Any, offset: Any, counters: int | None) -> Any:
    """op(seed, offset): Paddle's seed=0 ("the global generator") as hwport.seed's stream,
    `counters` counters of it; any other seed (or an offset with seed 0) is the op's own
    Philox stream, as given."""
    if (isinstance(seed_value, int) and not isinstance(seed_value, bool) and seed_value == 0
            and offset == 0 and counters is not None):
        return default_generator.draw_for(counters, op)
    return op(seed_value, offset)


def uniform(shape: int | list[int] | None, dtype: Any = None, min: float | None = 0.0,
            max: float | None = 1.0, seed: int | None = 0, offset: int | None = 0,
            place: Any = None, name: str | None = None) -> Any:
    """Uniform [min, max) (Paddle's paddle.uniform): seed=0 draws from the global generator
    (hwport.seed), so successive calls differ and a seeded run repeats on every device; a
    nonzero seed (and hwport's offset) picks the Philox stream itself."""
    from hwport.phi_ops import functional

    return _seeded(lambda s, o: functional.uniform(shape, dtype=dtype, min=min, max=max,
                                                   seed=s, offset=o, place=place),
                   seed, offset, _numel(shape))


def normal(mean: float | None = 0.0, std: float | None = 1.0,
           shape: int | list[int] | None = None, seed: int | None = 0, offset: int | None = 0,
           dtype: Any = None, place: Any = None, name: str | None = None) -> Any:
    """Normal(mean, std) (Paddle's paddle.normal): seed=0 draws from the global generator, as
    uniform does (two counters per element: Box-Muller's two uniforms)."""
    from hwport.phi_ops import functional

    n = _numel(shape)
    return _seeded(lambda s, o: functional.normal(mean=mean, std=std, shape=shape, seed=s,
                                                  offset=o, dtype=dtype, place=place),
                   seed, offset, None if n is None else 2 * n)
