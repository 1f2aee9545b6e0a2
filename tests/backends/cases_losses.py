"""Backend cases: ``squared_distance``, ``mse``, ``softmax_cross_entropy``, alone and after an ``mlp``.

float32 and float64, 0-d to 3-D inputs, the seed ``da`` as a number and as a
0-d array of the library under test; integer labels of several dtypes (they are
the loss's parameter, so they move to the library under test too, and their
zero delta must stay there); huge logits; and the training composite
``mlp >> loss``.

numpy gives a loss value as a numpy scalar, which the harness does not count
as an array; each case therefore runs the loss through :func:`_valued`, which
hands numpy's value on as a 0-d array and checks that every other library
gives a 0-d array (the harness then checks its library and its value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.backend._arrays import is_array
from prelens.core import tree_map
from prelens.nn import mlp, mse, softmax_cross_entropy, squared_distance

from .harness import Case

F64, F32 = np.float64, np.float32
REGRESSION = {"squared_distance": squared_distance, "mse": mse}


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dt: type, scale: float = 1.0) -> Any:
    return np.asarray(scale * rng.standard_normal(shape), dtype=dt)  # asarray: a 0-d array, not a scalar


def _tag(dt: type) -> str:
    return np.dtype(dt).name


def _valued(loss: Any) -> Any:
    """``loss`` with numpy's scalars (its value; ``dp``, ``ds`` of a 0-d input) as 0-d arrays.

    Another library's value must be a 0-d array.
    """

    def fwd(p: Any, s: Any) -> tuple[Any, Any]:
        m, value = loss.fwd(p, s)
        if isinstance(value, np.generic):  # numpy: the scalar of the input's dtype
            return m, np.asarray(value)
        assert is_array(value) and tuple(value.shape) == (), f"{loss!r}: the value is {value!r}, not a 0-d array"
        return m, value

    def bwd(m: Any, da: Any) -> tuple[Any, Any]:
        dp, ds = loss.bwd(m, da)
        return tree_map(_as_array, dp), _as_array(ds)

    return PreLens(fwd, bwd, repr(loss))


def _as_array(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, np.generic) else x


def _seed(kind: str, dt: type) -> Any:
    """The output delta: training's ``1.0``, or a 0-d array (of ``dt``, or float64 for a float32 loss)."""
    return 1.0 if kind == "number" else np.asarray(0.75, dtype=F64 if kind == "f64 array" else dt)


# --------------------------------------------------------------- regression


def _regression(name: str, dt: type, shape: tuple[int, ...], seed: str = "number") -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        g, s = _normal(rng, shape, dt), _normal(rng, shape, dt)
        return _valued(REGRESSION[name]), g, s, _seed(seed, dt)

    return Case(f"{name}({_tag(dt)}, shape {shape}, da {seed})", make)


# ------------------------------------------------------------ cross-entropy


def _cross_entropy(dt: type, labels: type, shape: tuple[int, ...], seed: str = "number", scale: float = 2.0) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        s = _normal(rng, shape, dt, scale)
        y: Any = rng.integers(0, shape[-1], shape[:-1]).astype(labels)
        return _valued(softmax_cross_entropy), y, s, _seed(seed, dt)

    huge = ", huge logits" if scale > 100 else ""
    return Case(f"softmax_cross_entropy({_tag(dt)}, {_tag(labels)} labels, shape {shape}, da {seed}{huge})", make)


# ---------------------------------------------------------- mlp >> loss


def _trained(loss: str, dt: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        net = mlp(4, [8, 8, 3], "relu", last_activation=None, dtype=dt, input_delta=False)
        x = _normal(rng, (*lead, 4), dt)
        if loss == "softmax_cross_entropy":
            labels = np.int64 if dt == F64 else np.int32  # JAX has int64 only in its 64-bit mode
            lens, target = net >> softmax_cross_entropy, rng.integers(0, 3, lead).astype(labels)
        else:
            lens, target = net >> REGRESSION[loss], _normal(rng, (*lead, 3), dt)
        return _valued(lens), (target, net.init(rng)), x, 1.0

    return Case(f"mlp(4-8-8-3) >> {loss}({_tag(dt)}, lead {lead})", make)


CASES = [
    *[
        _regression(name, dt, shape)
        for name in REGRESSION
        for dt in (F64, F32)
        for shape in ((), (5,), (4, 3), (2, 3, 4))
    ],
    *[_regression(name, dt, (4, 3), seed) for name in REGRESSION for dt in (F64, F32) for seed in ("array",)],
    *[_regression(name, F32, (4, 3), "f64 array") for name in REGRESSION],
    *[_cross_entropy(F64, np.int64, shape) for shape in ((5,), (4, 3), (2, 3, 7))],
    *[_cross_entropy(F32, np.int32, shape) for shape in ((5,), (4, 3), (2, 3, 7))],
    _cross_entropy(F64, np.int64, (4, 3), "array"),
    _cross_entropy(F32, np.int32, (4, 3), "f64 array"),
    _cross_entropy(F64, np.uint8, (16, 10)),
    *[_cross_entropy(dt, labels, (3, 5), scale=1e4) for dt, labels in ((F64, np.int64), (F32, np.int32))],
    *[_trained(loss, F64, (16,)) for loss in ("softmax_cross_entropy", "mse", "squared_distance")],
    _trained("softmax_cross_entropy", F32, (2, 8)),
]
