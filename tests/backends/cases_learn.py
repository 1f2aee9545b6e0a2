"""Backend cases: the lenses of ``prelens.learn`` that are not optimisers (``l2``, ``learning_rate``).

The optimiser lenses run five steps each in ``optim_cases.py``. A Python float
loss plus a penalty on another library's parameters is a 0-d array of that
library (no value is read back to the host), so the loss here is a 0-d array.
"""

from __future__ import annotations

import numpy as np

from prelens.learn import l2, learning_rate
from prelens.nn import DenseParams

from .harness import Case


def _l2(dtype: type, key: bool = False) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        p: list[object] = [
            DenseParams(rng.standard_normal((64, 32)).astype(dtype), rng.standard_normal(32).astype(dtype)),
            rng.standard_normal((32, 10)).astype(dtype),
        ]
        if key:
            p.append(np.arange(4, dtype=np.int64))  # a dropout key: not penalised, its delta zeros
        return l2(0.1), p, np.asarray(rng.random(), dtype=dtype), np.asarray(1.5, dtype=dtype)

    return Case(f"l2({np.dtype(dtype).name}{', a dropout key' if key else ''})", make)


def _rate(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    return learning_rate(0.5), (), np.asarray(rng.random()), ()


CASES = [
    _l2(np.float64),
    _l2(np.float32),
    _l2(np.float64, key=True),
    Case("learning_rate(0.5)", _rate),
]
