"""Backend cases: the activations, ``pointwise`` (with a user's function written for any library),
``softmax`` (masked rows of ``-inf``, huge logits), ``mlp`` and ``residual``.

float32 and float64; 0-d, 1-D and several leading axes; every activation on
its own and inside ``mlp`` (which fuses it into ``dense``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from array_api_compat import array_namespace

from prelens import add_l
from prelens.nn import dense, gelu, mlp, pointwise, relu, residual, sigmoid, softmax, tanh

from .harness import Case

F64, F32 = np.float64, np.float32
POINTWISE = {"tanh": tanh, "relu": relu, "sigmoid": sigmoid, "gelu": gelu}


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dt: type, scale: float = 1.0) -> Any:
    return np.asarray(scale * rng.standard_normal(shape), dtype=dt)  # asarray: a 0-d array, not a scalar


def _tag(dt: type) -> str:
    return np.dtype(dt).name


# --------------------------------------------------------------- pointwise


def _pointwise(name: str, dt: type, shape: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        s = _normal(rng, shape, dt, 2.0)
        if s.size > 2 and name == "relu":  # the kink: relu's derivative at 0 is taken as 0
            s.reshape(-1)[:2] = 0.0
        return POINTWISE[name], (), s, _normal(rng, shape, dt)

    return Case(f"{name}({_tag(dt)}, shape {shape})", make)


def _softplus_apply(z: Any) -> Any:
    xp = array_namespace(z)
    return xp.logaddexp(z, xp.zeros_like(z))


def _softplus_grad(z: Any, da: Any) -> Any:
    xp = array_namespace(z)
    return da / (1 + xp.exp(-z))


#: A user's activation written with the array API: runs on every library.
softplus = pointwise("softplus", _softplus_apply, _softplus_grad, "he")


def _user(dt: type, shape: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        return softplus, (), _normal(rng, shape, dt, 2.0), _normal(rng, shape, dt)

    return Case(f"pointwise(softplus)({_tag(dt)}, shape {shape})", make)


# ----------------------------------------------------------------- softmax


def _softmax(dt: type, shape: tuple[int, ...], kind: str = "") -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        s = _normal(rng, shape, dt, 3.0)
        if kind == "masked":  # a row of -inf (every key hidden) and a partly hidden one
            rows = s.reshape(-1, shape[-1])
            rows[0] = -np.inf
            rows[-1, : shape[-1] // 2] = -np.inf
        elif kind == "huge":
            s *= 1e4
        return softmax, (), s, _normal(rng, shape, dt)

    return Case(f"softmax({_tag(dt)}, shape {shape}{', ' + kind if kind else ''})", make)


# --------------------------------------------------------- mlp and residual


def _mlp(act: str | None, dt: type, lead: tuple[int, ...], last: str | None = "same", data: bool = False) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = mlp(4, [8, 8, 3], act, last_activation=last, dtype=dt, input_delta=not data)
        x, da = _normal(rng, (*lead, 4), dt), _normal(rng, (*lead, 3), dt)
        return lens, lens.init(rng), x, da

    extra = ("" if last == "same" else f", last={last}") + (", input_delta=False" if data else "")
    return Case(f"mlp(4-8-8-3, {act}{extra}, {_tag(dt)}, lead {lead})", make)


def _residual(act: str, dt: type, lead: tuple[int, ...]) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = residual(dense(4, 4, act, dtype=dt))
        return lens, lens.init(rng), _normal(rng, (*lead, 4), dt), _normal(rng, (*lead, 4), dt)

    return Case(f"residual(dense(4, {act}), {_tag(dt)}, lead {lead})", make)


def _residual_context(dt: type) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        f = (dense(4, 4, "tanh", dtype=dt) @ dense(3, 4, None, dtype=dt)) >> add_l  # (x, c) -> f(x) + g(c)
        lens = residual(f, context=True)
        s = (_normal(rng, (2, 5, 4), dt), _normal(rng, (2, 5, 3), dt))
        return lens, lens.init(rng), s, _normal(rng, (2, 5, 4), dt)

    return Case(f"residual(context, {_tag(dt)})", make)


SHAPES = [(), (7,), (4, 5), (2, 3, 4)]

CASES = [
    *[_pointwise(name, dt, shape) for name in POINTWISE for dt in (F64, F32) for shape in SHAPES],
    *[_user(dt, shape) for dt in (F64, F32) for shape in ((6,), (2, 3, 4))],
    *[_softmax(dt, shape) for dt in (F64, F32) for shape in ((5,), (3, 4), (2, 3, 6))],
    *[_softmax(dt, (4, 6), "masked") for dt in (F64, F32)],
    _softmax(F64, (2, 3, 5), "masked"),
    *[_softmax(dt, (3, 5), "huge") for dt in (F64, F32)],
    *[_mlp(act, F64, (16,)) for act in ("tanh", "relu", "sigmoid", "gelu")],
    _mlp("relu", F32, (16,), last=None),
    _mlp("gelu", F32, (2, 5), last=None, data=True),
    _mlp("tanh", F64, (2, 5), last="sigmoid"),
    _mlp(None, F64, (), last=None),
    *[_residual(act, dt, lead) for act, dt, lead in (("gelu", F64, (6,)), ("relu", F32, (2, 3)), ("tanh", F64, ()))],
    *[_residual_context(dt) for dt in (F64, F32)],
]
