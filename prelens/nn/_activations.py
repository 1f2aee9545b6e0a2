"""Activations as parameter-free array lenses: ``tanh``, ``relu``, ``sigmoid``, ``gelu``, ``softmax``.

Haskell (the post's activation, applied to every entry of an array)::

    activL :: PreLens D D D D () () D D
    activL = PreLens fw bw where fw (_, s) = (s, tanh s)
                                 bw (s, da) = ((), da * (1 - (tanh s)^2))

The pointwise ones (:class:`Activation`) keep the post's residue, the input ``s`` (a copy), and recompute
``f'(s)`` in the backward pass: one cheap elementwise pass, and the fast lenses are residue-for-residue twins
of the faithful ones. ``softmax`` (over the last axis) keeps its output instead. numpy keeps in-place fast
paths; other libraries run branch-free code (no Python ``if`` on values), so a JAX ``jit`` traces them.

>>> import numpy as np
>>> tanh
tanh
>>> m, a = tanh.fwd((), np.array([0.0, 1.0]))
>>> a.round(6), tanh.bwd(m, np.ones(2))[1].round(6)
(array([0.      , 0.761594]), array([1.      , 0.419974]))
>>> softmax.fwd((), np.array([[0.0, np.log(3.0)]]))[1]
array([[0.25, 0.75]])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, device, namespace, namespace_name, same_library
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import PreLens
from prelens.nn._fastcheck import Array
from prelens.nn._rows import row_max, row_sum

__all__ = ["ACTIVATIONS", "Activation", "gelu", "pointwise", "relu", "sigmoid", "softmax", "tanh"]


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Activation(PreLens[Array, Array, Array, Array, tuple[()], tuple[()], Array, Array]):
    """A pointwise activation: the parameter-free lens ``s -> f(s)`` that :func:`dense` fuses.

    Haskell: ``PreLens A A A A () () A A`` for arrays ``A`` of any shape. Forward ``((), s) -> (s, f(s))``;
    backward ``(s, da) -> ((), da ⊙ f'(s))``. It carries its two array functions for a dense layer to apply
    inside its own passes: ``apply(z) = f(z)`` and ``grad(z, da) = da ⊙ f'(z)``, each returning a fresh array
    and writing into neither argument; ``init_scheme`` is the weight initialisation that suits it
    (``"glorot"``, ``"he"`` or ``"lecun"``, see :func:`init_weight`).

    >>> relu.grad(np.array([-1.0, 2.0]), np.array([5.0, 5.0]))
    array([0., 5.])
    """

    apply: Callable[[Array], Array]
    grad: Callable[[Array, Array], Array]
    init_scheme: str


def checking(lens: str, what: str, f: Callable[..., Array]) -> Callable[..., Array]:
    """A user's ``f`` whose result must be an array of its first argument's library, dtype and shape, else an error
    naming ``lens`` (``np.where(z > 0, 1.0, 0.01)`` is float64: a float32 model would silently compute in float64).

    >>> checking("softplus", "apply", np.exp)(np.zeros(2))
    array([1., 1.])
    """

    def checked(z: Array, *rest: Array) -> Array:
        out = f(z, *rest)
        if same_library(out, z):
            if out.dtype == z.dtype and out.shape == z.shape:
                return out
            error = E.lens_dtype_error if out.dtype != z.dtype else E.lens_shape_error
            raise error(lens, f"the result of {what}", f"{E.describe(z)}, like its argument", E.describe(out))
        expected = f"an array of {namespace_name(namespace(z))}, like its argument (write {what} for that library)"
        raise E.must_be(lens, f"the result of {what}", expected, E.describe(out))

    return checked


#: Weight initialisations by name; see :func:`~prelens.nn._linear.init_weight`.
INIT_SCHEMES = ("glorot", "he", "lecun")

#: A float array of any shape, and an output delta like the residue (shaped as the output).
_FLOATS = Expects(input=Arr(None, ...), residue=Arr(None, ...), delta=Like(lambda m: (m, m.shape)))


def pointwise(
    name: str, apply: Callable[[Array], Array], grad: Callable[[Array, Array], Array], init_scheme: str = "glorot"
) -> Activation:
    """Make a pointwise activation from ``apply(z) = f(z)`` and ``grad(z, da) = da ⊙ f'(z)``.

    Both functions must return a fresh array and write into neither argument. They receive the caller's
    arrays as they are (numpy, PyTorch tensors, JAX tracers under ``jax.jit``): written with numpy functions
    (``softplus`` below) the activation is for numpy only; written with their argument's namespace
    (``array_api_compat.array_namespace(z)``) and without a Python ``if`` on values (``softsign`` below),
    for every library. A function that answers with another library's array, or another dtype or shape than its
    argument's, is an error naming it.

    >>> softplus = pointwise("softplus", lambda z: np.logaddexp(z, 0), lambda z, da: da / (1 + np.exp(-z)))
    >>> from prelens.testing import check_vjp
    >>> check_vjp(softplus, (), np.array([-1.0, 0.5]))
    >>> from prelens.nn import dense
    >>> dense(2, 3, softplus)
    dense(2→3, softplus)
    >>> from array_api_compat import array_namespace
    >>> def softsign_grad(z, da):
    ...     return da / (1 + array_namespace(z).abs(z)) ** 2
    >>> softsign = pointwise("softsign", lambda z: z / (1 + array_namespace(z).abs(z)), softsign_grad)
    >>> check_vjp(softsign, (), np.array([-1.0, 0.5]))
    """

    A.name("pointwise", "name", name)
    A.function("pointwise", "apply", apply)
    A.function("pointwise", "grad", grad)
    if init_scheme not in INIT_SCHEMES:
        raise E.not_one_of("pointwise", "init_scheme", INIT_SCHEMES, init_scheme)
    return _activation(name, checking(name, "apply", apply), checking(name, "grad", grad), init_scheme)


def _activation(
    name: str, apply: Callable[[Array], Array], grad: Callable[[Array, Array], Array], init_scheme: str
) -> Activation:
    """:func:`pointwise` without its checks, for the library's own functions (trusted: no call more in dense)."""

    def fwd(p: tuple[()], s: Array) -> tuple[Array, Array]:
        # the residue keeps its own copy: the caller may write into s afterwards
        if type(s) is not np.ndarray:
            return copy(s), apply(s)
        if s.ndim == 0:  # numpy turns 0-d results into scalars: run on one element
            return s.copy(), apply(s.reshape(1)).reshape(())
        return s.copy(), apply(s)

    def bwd(s: Array, da: Array) -> tuple[tuple[()], Array]:
        if type(s) is not np.ndarray:
            return (), grad(s, da)
        if s.ndim == 0:
            return (), grad(s.reshape(1), da.reshape(1)).reshape(())
        return (), grad(s, da)

    return Activation(fwd, bwd, name, expects=_FLOATS, apply=apply, grad=grad, init_scheme=init_scheme)


def _tanh_apply(z: Array) -> Array:
    """``tanh(z)``: numpy's ufunc on numpy arrays, the array's own library's on others.

    >>> _tanh_apply(np.array([0.0]))
    array([0.])
    """
    if type(z) is np.ndarray:
        return np.tanh(z)
    return namespace(z).tanh(z)  # type: ignore[no-any-return]


def _tanh_grad(z: Array, da: Array) -> Array:
    """``da ⊙ (1 − tanh(z)²)`` as ``da − da ⊙ tanh(z)²``: subtracting from the number 1 costs numpy a
    conversion per call, a third of this function's time on small arrays.

    >>> _tanh_grad(np.array([0.0]), np.array([2.0]))
    array([2.])
    """
    if type(z) is not np.ndarray:
        t = namespace(z).tanh(z)
        return da - t * t * da  # type: ignore[no-any-return]
    t = np.tanh(z)
    t *= t
    t *= da
    return np.subtract(da, t, out=t)


#: ``tanh`` on every entry (the post's activation); Glorot initialisation suits it.
tanh: Activation = _activation("tanh", _tanh_apply, _tanh_grad, "glorot")

#: The numpy ufunc an ``apply`` is on numpy arrays: a fused layer calls it directly (one Python call less).
NUMPY_APPLY: dict[Callable[[Array], Array], Callable[[Array], Array]] = {_tanh_apply: np.tanh}


def _relu_apply(z: Array) -> Array:
    """``max(z, 0)``.

    >>> _relu_apply(np.array([-1.0, 2.0]))
    array([0., 2.])
    """
    if type(z) is not np.ndarray:
        return namespace(z).maximum(z, 0)  # type: ignore[no-any-return]
    zero = np.zeros(z.shape, z.dtype)  # numpy's maximum runs 2-3x faster against an array than against 0
    return np.maximum(z, zero, out=zero)


def _relu_grad(z: Array, da: Array) -> Array:
    """``da`` where ``z > 0``, else ``0`` (the derivative at ``0`` is taken as ``0``).

    >>> _relu_grad(np.array([-1.0, 0.0, 2.0]), np.array([3.0, 3.0, 3.0]))
    array([0., 0., 3.])
    """
    if type(z) is not np.ndarray:  # numpy's product by the mask: NaN or inf in da at z <= 0 gives NaN there too
        return da * namespace(z).astype(z > 0, da.dtype)  # type: ignore[no-any-return]
    return np.multiply(da, z > 0)


#: ``max(s, 0)`` on every entry; He initialisation suits it.
relu: Activation = _activation("relu", _relu_apply, _relu_grad, "he")


def _sigmoid_apply(z: Array) -> Array:
    """``1 / (1 + e^−z)``, computed as ``½ (1 + tanh(z/2))`` (no overflow for large ``|z|``).

    >>> _sigmoid_apply(np.array([0.0, -1000.0, 1000.0]))
    array([0.5, 0. , 1. ])
    """
    if type(z) is not np.ndarray:
        return (namespace(z).tanh(z * 0.5) + 1) * 0.5  # type: ignore[no-any-return]
    y = np.multiply(z, 0.5)
    np.tanh(y, out=y)
    y += 1
    y *= 0.5
    return y


def _sigmoid_grad(z: Array, da: Array) -> Array:
    """``da ⊙ σ(z) (1 − σ(z))``.

    >>> _sigmoid_grad(np.array([0.0]), np.array([1.0]))
    array([0.25])
    """
    y = _sigmoid_apply(z)
    if type(z) is not np.ndarray:
        return (1 - y) * y * da
    g = np.subtract(1, y)
    g *= y
    g *= da
    return g


#: The logistic function ``1 / (1 + e^−s)`` on every entry; Glorot initialisation suits it.
sigmoid: Activation = _activation("sigmoid", _sigmoid_apply, _sigmoid_grad, "glorot")


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _gelu_apply(z: Array) -> Array:
    """``½ z (1 + tanh(√(2/π) (z + 0.044715 z³)))``, the tanh form of GELU (as in GPT-2).

    >>> _gelu_apply(np.array([0.0, 1.0])).round(6)
    array([0.      , 0.841192])
    """
    if type(z) is not np.ndarray:  # the same operations in the same order, without out=
        t = namespace(z).tanh((z * z * _GELU_K + 1) * z * _GELU_C)
        return (t + 1) * z * 0.5  # type: ignore[no-any-return]
    u = np.multiply(z, z)
    u *= _GELU_K
    u += 1
    u *= z
    u *= _GELU_C
    np.tanh(u, out=u)
    u += 1
    u *= z
    u *= 0.5
    return u


def _gelu_grad(z: Array, da: Array) -> Array:
    """``da ⊙ gelu'(z)``: with ``t = tanh(c (z + k z³))``,
    ``gelu'(z) = ½ (1 + t) + ½ z (1 − t²) c (1 + 3k z²)``, ``(1 − t²) z`` formed first: far out it is 0 before
    ``c (1 + 3k z²)`` scales it, so an overflow of ``z³`` (to ``t = ±1``) makes no ``0 · inf`` (one of ``z²``,
    past ``|z| ≈ 1e154`` in float64, ``2e19`` in float32, does: NaN, as in PyTorch and JAX).

    >>> _gelu_grad(np.array([0.0]), np.array([1.0]))
    array([0.5])
    """
    if type(z) is not np.ndarray:
        zz = z * z
        th = namespace(z).tanh((zz * _GELU_K + 1) * z * _GELU_C)
        cq = (zz * (3 * _GELU_K) + 1) * _GELU_C
        return (((1 - th * th) * z) * cq + th + 1) * 0.5 * da  # type: ignore[no-any-return]
    z2 = np.multiply(z, z)
    t = np.multiply(z2, _GELU_K)
    t += 1
    t *= z
    t *= _GELU_C
    np.tanh(t, out=t)
    q = np.multiply(z2, 3 * _GELU_K, out=z2)
    q += 1
    q *= _GELU_C  # q = c (1 + 3k z²)
    g = np.multiply(t, t)
    np.subtract(1, g, out=g)
    g *= z
    g *= q
    g += t
    g += 1
    g *= 0.5
    g *= da
    return g


#: GELU in its tanh form (GPT-2's, PyTorch's ``GELU(approximate="tanh")``; numpy has no ``erf``); He suits it.
gelu: Activation = _activation("gelu", _gelu_apply, _gelu_grad, "he")


def _softmax_fwd(p: tuple[()], s: Array) -> tuple[Array, Array]:
    if s.ndim == 0 or s.shape[-1] == 0:
        raise E.lens_shape_error("softmax", "input", "a float array (..., n) with n >= 1", E.describe(s))
    if type(s) is not np.ndarray:
        y = softmax_any(s)
        return y, y
    top = row_max(s)
    if not np.isfinite(top).all():  # rows of -inf (a mask written with -inf): weights as for MASKED
        s = np.maximum(s, -1e30)
        top = row_max(s)
    y = np.subtract(s, top[..., None])  # shift: exp never overflows
    np.exp(y, out=y)
    y /= row_sum(y)[..., None]
    return y, y


def softmax_any(s: Any) -> Any:
    """numpy's softmax on another library's array, without a branch (a JAX ``jit`` traces it): every entry
    raised to at least ``-1e30`` when some row's maximum is not finite, to ``-inf`` (no change) otherwise."""
    xp = namespace(s)
    top = xp.max(s, axis=-1, keepdims=True)
    floor = xp.where(xp.all(xp.isfinite(top)), -math.inf, xp.full((), -1e30, dtype=s.dtype, device=device(s)))
    s, top = xp.maximum(s, floor), xp.maximum(top, floor)  # max(max(s, f)) = max(max(s), f)
    y = xp.exp(s - top)  # shift: exp never overflows
    return y / xp.sum(y, axis=-1, keepdims=True)


def _softmax_bwd(y: Array, da: Array) -> tuple[tuple[()], Array]:
    ds = da * y
    return (), (da - row_sum(ds)[..., None]) * y  # ds = y ⊙ (da − Σ da·y)


#: ``softmax`` over the last axis: ``y = e^s / Σ e^s``, shifted by the row maximum. Residue: the output ``y``;
#: backward ``ds = y ⊙ (da − ⟨da, y⟩)``. Not pointwise: :func:`dense` does not take it (a classifier gives its
#: logits to :func:`softmax_cross_entropy`, which is stabler).
softmax: PreLens[Array, Array, Array, Array, tuple[()], tuple[()], Array, Array] = PreLens(
    _softmax_fwd, _softmax_bwd, "softmax", expects=_FLOATS
)

#: The pointwise activations by name (for command lines and configuration files).
ACTIVATIONS: dict[str, Activation] = {a.name: a for a in (tanh, relu, sigmoid, gelu)}


def resolve_activation(fn: str, activation: Activation | str | None) -> Activation | None:
    """An :class:`Activation` from itself, its name, or ``None`` (no activation).

    >>> resolve_activation("dense", "relu")
    relu
    >>> resolve_activation("dense", None) is None
    True
    """
    if activation is None or isinstance(activation, Activation):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    is_softmax = (activation if isinstance(activation, str) else getattr(activation, "name", None)) == "softmax"
    hint = " (softmax is not pointwise: put it after the layer)" if is_softmax else ""
    raise E.not_one_of(fn, "activation", sorted(ACTIVATIONS), activation, hint, or_none=True)
