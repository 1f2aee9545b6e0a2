"""Whole-array layers: ``linear``, ``bias`` and the fused ``dense`` (``tanh(x W + b)``).

The fast twins of the post's ``linearL``, ``biasL`` and ``layer``: a layer of ``n_out`` neurons is one
matrix ``W (n_in, n_out)`` (column ``j`` is neuron ``j``'s weight vector) and one bias vector. ``bwd``
allocates exactly the arrays it returns (plus, in ``dense``, one for ``da ⊙ f'(z)``) and never writes into
its arguments, the residue or the parameters.

>>> import numpy as np
>>> layer = dense(3, 2, tanh)
>>> layer
dense(3→2, tanh)
>>> from prelens.core import tree_shapes
>>> tree_shapes(layer.init(0))
DenseParams(weight='f64[3,2]', bias='f64[2]')
>>> m, y = layer.fwd(layer.init(0), np.ones((5, 3)))
>>> y.shape
(5, 2)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import PreLens
from prelens.core._registry import constructor
from prelens.nn._activations import INIT_SCHEMES, NUMPY_APPLY, Activation, resolve_activation, tanh
from prelens.nn._fastcheck import Array, check_size, dtype_suffix, float_dtype
from prelens.nn._rows import column_sum, matmul, ones, reshape

__all__ = ["INIT_SCHEMES", "DenseParams", "bias", "dense", "init_weight", "linear"]


class DenseParams(NamedTuple):
    """The parameters of :func:`dense`: ``weight`` of shape ``(n_in, n_out)``, ``bias`` of ``(n_out,)``.

    A named tuple (tree paths read ``[0].weight``); its deltas have the same type.

    >>> DenseParams(np.zeros((2, 3)), np.zeros(3)).bias.shape
    (3,)
    """

    weight: Array
    bias: Array


#: The residue of :func:`dense`: the input ``x``, the weight ``W`` and the pre-activation ``z``.
DenseResidue = tuple[Array, Array, Array]


def init_weight(scheme: str, n_in: int, n_out: int, dtype: npt.DTypeLike, rng: np.random.Generator) -> Array:
    """A random ``(n_in, n_out)`` weight matrix.

    ``"glorot"`` (Glorot & Bengio 2010, for tanh and sigmoid): uniform on
    ``±√(6 / (n_in + n_out))``; ``"he"`` (He et al. 2015, for relu and gelu):
    normal with standard deviation ``√(2 / n_in)``; ``"lecun"``: normal with
    ``√(1 / n_in)`` (the faithful network's choice). Drawn in float64 and then
    rounded to ``dtype``, so a float32 network starts as its float64 twin rounded.

    >>> w = init_weight("glorot", 784, 256, np.float32, np.random.default_rng(0))
    >>> w.dtype, w.shape, bool(abs(w).max() <= np.sqrt(6 / (784 + 256)))
    (dtype('float32'), (784, 256), True)
    """
    n_in, n_out = check_size("init_weight", "n_in", n_in), check_size("init_weight", "n_out", n_out)
    dtype = float_dtype("init_weight", dtype)
    rng = A.seed("init_weight", rng)
    if scheme == "glorot":
        limit = math.sqrt(6.0 / (n_in + n_out))
        w = rng.uniform(-limit, limit, (n_in, n_out))
    elif scheme in ("he", "lecun"):
        w = rng.standard_normal((n_in, n_out)) * math.sqrt((2.0 if scheme == "he" else 1.0) / n_in)
    else:
        raise E.not_one_of("init_weight", "scheme", INIT_SCHEMES, scheme)
    return w.astype(dtype, copy=False)


def _check_scheme(fn: str, scheme: str) -> str:
    if not isinstance(scheme, str) or scheme not in INIT_SCHEMES:
        raise E.not_one_of(fn, "init", INIT_SCHEMES, scheme, or_none=True)
    return scheme


def _times_transpose(da: Array, w: Array) -> Array:
    """``da Wᵀ``, leading axes flattened first: a stacked ``da @ Wᵀ`` runs BLAS once per leading index and,
    with the transposed operand, at up to half the speed (measured on ``(16, 32, 64)``)."""
    if da.ndim <= 2:
        return matmul(da, w.T)
    return reshape(matmul(reshape(da, (-1, da.shape[-1])), w.T), (*da.shape[:-1], w.shape[0]))


def _weight_delta(x: Array, da: Array) -> Array:
    """``xᵀ da`` summed over every leading axis: ``(n_in, n_out)``."""
    if da.ndim == 2:
        return matmul(x.T, da)
    return matmul(reshape(x, (-1, x.shape[-1])).T, reshape(da, (-1, da.shape[-1])))


def _bias_delta(da: Array) -> Array:
    """``da`` summed over every leading axis: ``(n_out,)``."""
    return column_sum(da if da.ndim == 2 else reshape(da, (-1, da.shape[-1])))


@constructor
def linear(
    n_in: int,
    n_out: int,
    *,
    dtype: npt.DTypeLike = np.float64,
    init: str = "glorot",
    input_delta: bool = True,
) -> PreLens[Array, Array, tuple[Array, Array], tuple[Array, Array], Array, Array, Array, Any]:
    """The linear map ``x ↦ x W`` on inputs ``(..., n_in)``, with ``W`` of shape ``(n_in, n_out)``.

    Haskell (``n_out`` copies of the post's ``linearL`` sharing their input)::

        linearL :: Int -> PreLens D D (V, V) (V, V) V V V V

    Forward ``(W, x) -> ((x, W), x W)``; backward ``((x, W), da) -> (xᵀ da, da Wᵀ)``, ``xᵀ da`` summed
    over every leading axis. ``input_delta=False`` treats the input as data: ``bwd`` returns ``None`` for
    ``ds`` and skips the ``da Wᵀ`` product. Use it only on a first layer fed with data.

    >>> lin = linear(2, 3)
    >>> lin
    linear(2→3)
    >>> w = np.arange(6.0).reshape(2, 3)
    >>> m, a = lin.fwd(w, np.ones((4, 7, 2)))
    >>> a.shape, lin.bwd(m, np.ones((4, 7, 3)))[0]
    ((4, 7, 3), array([[28., 28., 28.],
           [28., 28., 28.]]))
    """
    return _linear(n_in, n_out, dtype=dtype, init=init, input_delta=input_delta)


def _linear(
    n_in: int,
    n_out: int,
    *,
    dtype: npt.DTypeLike = np.float64,
    init: str = "glorot",
    input_delta: bool = True,
    copy_input: bool = True,
) -> PreLens[Array, Array, tuple[Array, Array], tuple[Array, Array], Array, Array, Array, Any]:
    """:func:`linear`; ``copy_input=False`` keeps the input in the residue without a copy, for an input the
    model around the layer made, which no caller holds (an attention lens's output projection)."""
    n_in, n_out = check_size("linear", "n_in", n_in), check_size("linear", "n_out", n_out)
    dt = float_dtype("linear", dtype)
    input_delta = A.flag("linear", "input_delta", input_delta)
    scheme = _check_scheme("linear", init)
    name = f"linear({n_in}→{n_out}{dtype_suffix(dt)}{'' if input_delta else ', input_delta=False'})"
    expects = Expects(
        params=Arr(dt, n_in, n_out),
        input=Arr(dt, ..., n_in),
        residue=(Arr(dt, ..., n_in), Arr(dt, n_in, n_out)),
        delta=Like(lambda m: (m[0], (*m[0].shape[:-1], n_out))),  # the output's shape: x's leading axes
    )

    def fwd(w: Array, x: Array) -> tuple[tuple[Array, Array], Array]:
        # The residue keeps copies of what bwd reads (x, and W for ds): the caller may write
        # into x or W after this pass. Without ds, bwd reads only W's shape: no copy.
        return ((copy(x) if copy_input else x), (copy(w) if input_delta else w)), matmul(x, w)

    def bwd(m: tuple[Array, Array], da: Array) -> tuple[Array, Array | None]:
        x, w = m
        return _weight_delta(x, da), (_times_transpose(da, w) if input_delta else None)

    return PreLens(fwd, bwd, name, lambda rng: init_weight(scheme, n_in, n_out, dt, rng), expects=expects)


@constructor
def bias(
    n: int, *, dtype: npt.DTypeLike = np.float64
) -> PreLens[Array, Array, tuple[()], tuple[()], Array, Array, Array, Array]:
    """Add a bias vector of shape ``(n,)`` to inputs ``(..., n)``; initialised to zeros.

    Haskell (``n`` copies of the post's ``biasL``)::

        biasL :: PreLens D D () () D D D D

    Forward ``(b, x) -> ((), x + b)``; backward ``((), da) -> (Σ da, da)``,
    the bias delta summed over every leading axis.

    >>> b = bias(2)
    >>> b, b.init(0)
    (bias(2), array([0., 0.]))
    >>> b.bwd((), np.ones((3, 2)))[0]
    array([3., 3.])
    """
    n = check_size("bias", "n", n)
    dt = float_dtype("bias", dtype)
    name = f"bias({n}{dtype_suffix(dt)})"
    expects = Expects(params=Arr(dt, n), input=Arr(dt, ..., n), residue=(), delta=Arr(dt, ..., n))

    def fwd(b: Array, x: Array) -> tuple[tuple[()], Array]:
        return (), x + b

    def bwd(m: tuple[()], da: Array) -> tuple[Array, Array]:
        return _bias_delta(da), da

    return PreLens(fwd, bwd, name, lambda rng: np.zeros(n, dt), expects=expects)


@constructor
def dense(
    n_in: int,
    n_out: int,
    activation: Activation | str | None = tanh,
    *,
    dtype: npt.DTypeLike = np.float64,
    init: str | None = None,
    input_delta: bool = True,
) -> PreLens[Array, Array, DenseResidue, DenseResidue, DenseParams, DenseParams, Array, Any]:
    """A layer of ``n_out`` neurons: ``y = f(x W + b)`` on inputs ``(..., n_in)``, in one lens.

    Haskell: the array form of the post's ``layer``::

        layer :: Int -> Int -> TriLens V V [((V, V), D)] [((V, V), D)] [Para] [Para] V V

    ``chain(linear(n_in, n_out), bias(n_out), activation)`` fused into one Python call per pass, with
    parameters :class:`DenseParams` ``(W (n_in, n_out), b (n_out,))`` and residue ``(x, W, z)`` (``z = x W
    + b``, the pre-activation); on a single vector it equals the faithful ``layer``. ``activation`` is a
    pointwise activation, its name, or ``None`` for logits. ``init`` is a weight scheme of
    :func:`init_weight`, by default the one that suits the activation; the bias starts at zero.
    ``input_delta=False``: see :func:`linear`.

    >>> layer = dense(784, 256, "relu", dtype=np.float32)
    >>> layer
    dense(784→256, relu, f32)
    >>> layer.fwd(layer.init(0), np.zeros((8, 100), np.float32))
    Traceback (most recent call last):
    ...
    prelens.errors.ShapeError: dense(784→256, relu, f32): input: expected f32[...,784], got f32[8,100]
    """
    return _dense(n_in, n_out, activation, dtype=dtype, init=init, input_delta=input_delta)


def _dense(
    n_in: int,
    n_out: int,
    activation: Activation | str | None,
    *,
    dtype: npt.DTypeLike,
    init: str | None,
    input_delta: bool,
    copy_input: bool = True,
) -> PreLens[Array, Array, DenseResidue, DenseResidue, DenseParams, DenseParams, Array, Any]:
    """:func:`dense`; ``copy_input=False`` keeps the input in the residue without a copy, for an input the
    model around the layer made, which no caller holds (the hidden layers of :func:`~prelens.nn.mlp`)."""
    n_in, n_out = check_size("dense", "n_in", n_in), check_size("dense", "n_out", n_out)
    dt = float_dtype("dense", dtype)
    input_delta = A.flag("dense", "input_delta", input_delta)
    act = resolve_activation(f"dense({n_in}→{n_out})", activation)
    scheme = _check_scheme("dense", init) if init is not None else (act.init_scheme if act else "glorot")
    name = (
        f"dense({n_in}→{n_out}{', ' + act.name if act else ''}{dtype_suffix(dt)}"
        f"{'' if input_delta else ', input_delta=False'})"
    )
    # numpy's own ufunc where the activation is one (tanh): one Python call less per pass
    apply = None if act is None else NUMPY_APPLY.get(act.apply, act.apply)
    apply_any = None if act is None else act.apply
    grad = None if act is None else act.grad
    x_pattern, w_pattern, z_pattern = Arr(dt, ..., n_in), Arr(dt, n_in, n_out), Arr(dt, ..., n_out)
    expects = Expects(
        params=DenseParams(w_pattern, Arr(dt, n_out)),  # type: ignore[arg-type]  # a pattern of DenseParams
        input=x_pattern,
        residue=(x_pattern, w_pattern, z_pattern),
        delta=Like(lambda m: (m[2], m[2].shape)),  # z is shaped as the output
    )

    def fwd(p: DenseParams, x: Array) -> tuple[DenseResidue, Array]:
        w, b = p
        # The residue keeps copies of what bwd reads from x and W (the caller may write into
        # them after this pass); z is ours. Without ds, bwd reads only W's shape: no copy.
        if type(x) is np.ndarray is type(w) and x.ndim == 2:  # numpy rows: no helper calls (the small MLP)
            z = np.dot(x, w)
            z += b
            m = (x.copy() if copy_input else x), (w.copy() if input_delta else w), z
        else:
            z = matmul(x, w)
            z += b  # z is ours: add the bias in place (a JAX array is rebound, not written)
            m = (copy(x) if copy_input else x), (copy(w) if input_delta else w), z
        if apply is None:
            return m, z
        return m, (apply(z) if type(z) is np.ndarray else apply_any(z))  # type: ignore[misc]

    def bwd(m: DenseResidue, da: Array) -> tuple[DenseParams, Array | None]:
        x, w, z = m
        dz = da if grad is None else grad(z, da)
        if type(dz) is np.ndarray and dz.ndim == 2:  # numpy rows: BLAS at once, no helper calls (the small MLP)
            ds = np.dot(dz, w.T) if input_delta else None
            return tuple.__new__(DenseParams, (np.dot(x.T, dz), np.dot(ones(dz.shape[0], dz.dtype), dz))), ds
        ds = _times_transpose(dz, w) if input_delta else None
        # a named tuple without its generated __new__ (one call less)
        return tuple.__new__(DenseParams, (_weight_delta(x, dz), _bias_delta(dz))), ds

    def init_params(rng: np.random.Generator) -> DenseParams:
        return DenseParams(init_weight(scheme, n_in, n_out, dt, rng), np.zeros(n_out, dt))

    return PreLens(fwd, bwd, name, init_params, expects=expects)
