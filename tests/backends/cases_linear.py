"""Backend cases: ``linear``, ``bias``, ``dense`` (every activation), ``mlp``."""

from __future__ import annotations

import numpy as np

from prelens.nn import bias, dense, linear, mlp

from .harness import Case


def _dense(act: str | None, dtype: type = np.float64, lead: tuple[int, ...] = (5,)) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = dense(3, 4, act, dtype=dtype)
        x = rng.standard_normal((*lead, 3)).astype(dtype)
        return lens, lens.init(rng), x, rng.standard_normal((*lead, 4)).astype(dtype)

    return Case(f"dense({act}, {np.dtype(dtype).name}, lead {lead})", make)


def _linear(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = linear(3, 2)
    return lens, lens.init(rng), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2))


def _linear_data(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = linear(3, 2, input_delta=False)
    return lens, lens.init(rng), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))


def _bias(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = bias(3)
    return lens, rng.standard_normal(3), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3))


def _mlp(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = mlp(4, [8, 8, 3])
    return lens, lens.init(rng), rng.standard_normal((16, 4)), rng.standard_normal((16, 3))


CASES = [
    Case("linear", _linear),
    Case("linear(input_delta=False)", _linear_data),
    Case("bias", _bias),
    Case("mlp 4-8-8-3", _mlp),
    *[_dense(act) for act in ("tanh", "relu", "sigmoid", "gelu", None)],
    _dense("tanh", np.float32),
    _dense("relu", np.float64, (2, 3)),
]
