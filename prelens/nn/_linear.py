"""Whole-array layers: ``linear``, ``bias`` and the fused ``dense`` (``tanh(x W + b)``).

These are the fast twins of the post's ``linearL``, ``biasL`` and ``layer``: a
layer of ``n_out`` neurons is one matrix ``W`` of shape ``(n_in, n_out)``
(column ``j`` is neuron ``j``'s weight vector) and one bias vector. Inputs
have any number of leading axes, ``(..., n_in)``: a batch is a leading axis,
and the parameter deltas are summed over every leading axis, exactly as
:func:`~prelens.batch_n` sums them. ``float64`` by default, ``float32`` with
``dtype=np.float32``; nothing is ever up-cast (an input of another dtype is a
:class:`~prelens.DTypeError`, of another width a :class:`~prelens.ShapeError`).

``bwd`` allocates exactly the arrays it returns (plus, in ``dense``, one for
``da ⊙ f'(z)``) and never writes into its arguments, the residue or the
parameters.

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
from prelens.core._lens import PreLens
from prelens.core._registry import constructor
from prelens.nn._activations import NUMPY_APPLY, Activation, resolve_activation, tanh
from prelens.nn._fastcheck import (
    Array,
    check_size,
    delta_error,
    dtype_suffix,
    features,
    float_dtype,
    input_error,
    is_float_array,
    param_error,
    residue_error,
    shape_str,
)
from prelens.nn._rows import column_sum, matmul, ones, reshape

__all__ = ["INIT_SCHEMES", "DenseParams", "bias", "dense", "init_weight", "linear"]


class DenseParams(NamedTuple):
    """The parameters of :func:`dense`: ``weight`` of shape ``(n_in, n_out)``, ``bias`` of ``(n_out,)``.

    A named tuple, so the tree toolkit and the optimisers handle it, and tree
    paths read ``[0].weight``. Its deltas have the same type.

    >>> DenseParams(np.zeros((2, 3)), np.zeros(3)).bias.shape
    (3,)
    """

    weight: Array
    bias: Array


#: The residue of :func:`dense`: the input ``x``, the weight ``W`` and the pre-activation ``z``.
DenseResidue = tuple[Array, Array, Array]

#: Weight initialisations by name; see :func:`init_weight`.
INIT_SCHEMES = ("glorot", "he", "lecun")


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
    if not isinstance(rng, np.random.Generator):
        rng = A.seed("init_weight", rng)
    if scheme == "glorot":
        limit = math.sqrt(6.0 / (n_in + n_out))
        w = rng.uniform(-limit, limit, (n_in, n_out))
    elif scheme == "he":
        w = rng.standard_normal((n_in, n_out)) * math.sqrt(2.0 / n_in)
    elif scheme == "lecun":
        w = rng.standard_normal((n_in, n_out)) * math.sqrt(1.0 / n_in)
    else:
        raise E.not_one_of("init_weight", "scheme", INIT_SCHEMES, scheme)
    return w.astype(dtype, copy=False)


def _check_scheme(fn: str, scheme: str) -> str:
    if not isinstance(scheme, str) or scheme not in INIT_SCHEMES:
        raise E.not_one_of(fn, "init", INIT_SCHEMES, scheme, or_none=True)
    return scheme


def _times_transpose(da: Array, w: Array) -> Array:
    """``da Wᵀ`` (the input delta); BLAS reads ``Wᵀ`` in place, nothing is copied.

    ``np.dot`` on 1-D and 2-D arrays (less call overhead than ``@`` on small
    ones); leading axes are flattened first, as one product of ``(N, n_out)`` by
    ``Wᵀ``: a stacked ``da @ Wᵀ`` runs BLAS once per leading index and, with the
    transposed operand, at up to half the speed (measured on ``(16, 32, 64)``).
    """
    if type(da) is not np.ndarray:
        return da @ w.T
    out: Array = np.dot(da, w.T) if da.ndim <= 2 else np.dot(da.reshape(-1, da.shape[-1]), w.T)
    return out if da.ndim <= 2 else out.reshape(*da.shape[:-1], w.shape[0])


def _has_dtype(a: Array, dt: np.dtype[Any], on_numpy: bool) -> bool:
    """A result's dtype is ``dt`` (numpy: an identity test first, the cheapest)."""
    return (a.dtype is dt or a.dtype == dt) if on_numpy else is_float_array(a, dt)


def _weight_delta(x: Array, da: Array, n_in: int, n_out: int) -> Array:
    """``xᵀ da`` summed over every leading axis: ``(n_in, n_out)``."""
    if da.ndim == 2:
        return matmul(x.T, da)
    return matmul(reshape(x, (-1, n_in)).T, reshape(da, (-1, n_out)))


# ------------------------------------------------------------------ linear


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

    Forward ``(W, x) -> ((x, W), x W)``; backward
    ``((x, W), da) -> (xᵀ da, da Wᵀ)``, ``xᵀ da`` summed over every leading
    axis. Shapes: ``x (..., n_in) -> (..., n_out)``; works on ``(batch, time,
    d)`` as well as ``(batch, d)`` or a single ``(d,)``.

    ``input_delta=False`` treats the input as data, not a variable: ``bwd``
    returns ``None`` for ``ds`` and skips the ``da Wᵀ`` product (one of the
    backward pass's two matrix products). Use it only on a first layer fed
    with data: nothing before it can receive a delta.

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
    """:func:`linear`. ``copy_input=False`` is for a layer whose input is an array that the model
    around it made (the output projection of an attention lens): its residue keeps that input
    without a copy, as no caller holds it."""
    n_in, n_out = check_size("linear", "n_in", n_in), check_size("linear", "n_out", n_out)
    dt = float_dtype("linear", dtype)
    input_delta = A.flag("linear", "input_delta", input_delta)
    scheme = _check_scheme("linear", init)
    name = f"linear({n_in}→{n_out}{dtype_suffix(dt)}{'' if input_delta else ', input_delta=False'})"
    tail, out_tail, w_shape = (n_in,), (n_out,), (n_in, n_out)
    expect_x, expect_w = features(dt, n_in), f"{E.dtype_name(dt)}[{n_in},{n_out}]"

    def fwd(w: Array, x: Array) -> tuple[tuple[Array, Array], Array]:
        on_numpy = type(x) is np.ndarray  # numpy: inline checks, no call more (the small MLP's step)
        if not (x.dtype == dt if on_numpy else is_float_array(x, dt)) or x.shape[-1:] != tail:
            raise input_error(name, "input", x, expect_x, dt)
        if not (type(w) is np.ndarray and w.dtype == dt if on_numpy else is_float_array(w, dt)) or w.shape != w_shape:
            raise param_error(name, "weight", w, expect_w, dt)
        # The residue keeps copies of what bwd reads (x, and W for ds): the caller may write
        # into x or W after this pass. Without ds, bwd reads only W's shape: no copy.
        if on_numpy:
            kept = (x.copy() if copy_input else x), (w.copy() if input_delta else w)
            return kept, (np.dot(x, w) if x.ndim <= 2 else x @ w)
        return ((copy(x) if copy_input else x), (copy(w) if input_delta else w)), x @ w

    def bwd(m: tuple[Array, Array], da: Array) -> tuple[Array, Array | None]:
        try:  # checked as in dense: shapes before, the results' shapes and dtypes after
            x, w = m
            bad_m = w.shape != w_shape or x.shape[-1:] != tail
        except (TypeError, ValueError, AttributeError):
            bad_m = True
        if bad_m:
            raise residue_error(name, m)
        on_numpy = type(da) is np.ndarray
        if (
            not (da.dtype == dt if on_numpy else is_float_array(da, dt))
            or da.shape[-1:] != out_tail
            or da.shape[:-1] != x.shape[:-1]
        ):
            raise input_error(name, "output delta", da, shape_str(dt, (*x.shape[:-1], n_out)), dt)
        try:
            dw = _weight_delta(x, da, n_in, n_out)
            ds = _times_transpose(da, w) if input_delta else None
        except (TypeError, ValueError):
            raise residue_error(name, m) from None
        if not _has_dtype(dw, dt, on_numpy) or (ds is not None and not _has_dtype(ds, dt, on_numpy)):
            raise residue_error(name, m)
        return dw, ds

    return PreLens(fwd, bwd, name, lambda rng: init_weight(scheme, n_in, n_out, dt, rng))


# -------------------------------------------------------------------- bias


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
    tail = (n,)
    expect = features(dt, n)

    def fwd(b: Array, x: Array) -> tuple[tuple[()], Array]:
        if not is_float_array(x, dt) or x.shape[-1:] != tail:
            raise input_error(name, "input", x, expect, dt)
        if not is_float_array(b, dt) or b.shape != tail:
            raise param_error(name, "bias", b, f"{E.dtype_name(dt)}[{n}]", dt)
        return (), x + b

    def bwd(m: tuple[()], da: Array) -> tuple[Array, Array]:
        if not is_float_array(da, dt) or da.shape[-1:] != tail:
            raise input_error(name, "output delta", da, expect, dt)
        return column_sum(reshape(da, (-1, n))), da

    return PreLens(fwd, bwd, name, lambda rng: np.zeros(n, dt))


# ------------------------------------------------------------------- dense


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

    It equals ``chain(linear(n_in, n_out), bias(n_out), activation)`` with
    parameters :class:`DenseParams` ``(W, b)`` and residue ``(x, W, z)``
    (``z = x W + b``, the pre-activation), fused into one Python call per
    pass; and on a single vector it equals the faithful ``layer`` (see
    :mod:`prelens.nn._convert`). Shapes: ``W (n_in, n_out)``, ``b (n_out,)``,
    ``x (..., n_in) -> y (..., n_out)``; parameter deltas are summed over every
    leading axis.

    ``activation`` is a pointwise activation (``tanh``, ``relu``, ``sigmoid``,
    ``gelu``), its name, or ``None`` for logits. ``init`` is a weight scheme of
    :func:`init_weight`; by default the one that suits the activation (Glorot
    for tanh, sigmoid and none, He for relu and gelu). The bias starts at zero.
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
    """:func:`dense`. ``copy_input=False`` is for a layer whose input is an array that the model
    around it made (the hidden layers of :func:`~prelens.nn.mlp`): its residue keeps that input
    without a copy, as no caller holds it."""
    n_in, n_out = check_size("dense", "n_in", n_in), check_size("dense", "n_out", n_out)
    dt = float_dtype("dense", dtype)
    input_delta = A.flag("dense", "input_delta", input_delta)
    act = resolve_activation(f"dense({n_in}→{n_out})", activation)
    scheme = _check_scheme("dense", init) if init is not None else (act.init_scheme if act else "glorot")
    name = (
        f"dense({n_in}→{n_out}{', ' + act.name if act else ''}{dtype_suffix(dt)}"
        f"{'' if input_delta else ', input_delta=False'})"
    )
    apply = act.apply if act is not None else None
    apply_np = NUMPY_APPLY.get(apply, apply) if apply is not None else None
    grad = act.grad if act is not None else None
    tail, w_shape, b_shape, out_tail = (n_in,), (n_in, n_out), (n_out,), (n_out,)
    expect_x = features(dt, n_in)

    def fwd(p: DenseParams, x: Array) -> tuple[DenseResidue, Array]:
        on_numpy = type(x) is np.ndarray  # numpy: inline checks, no call more (the small MLP's step)
        if not ((x.dtype is dt or x.dtype == dt) if on_numpy else is_float_array(x, dt)) or x.shape[-1:] != tail:
            raise input_error(name, "input", x, expect_x, dt)
        try:  # DenseParams only: the dp it returns has that type, so a plain pair would not fit it
            w, b = p
            ok = (
                type(p) is DenseParams
                and w.shape == w_shape
                and b.shape == b_shape
                and (
                    (w.dtype is dt is b.dtype or w.dtype == dt == b.dtype)
                    if on_numpy
                    else is_float_array(w, dt) and is_float_array(b, dt)
                )
            )
        except (TypeError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise _dense_params_error(name, p, n_in, n_out, dt)
        # The residue keeps copies of what bwd reads from x and W (the caller may write into
        # them after this pass); z is ours. Without ds, bwd reads only W's shape: no copy.
        if on_numpy:
            x_kept = x.copy() if copy_input else x
            z = np.dot(x, w) if x.ndim <= 2 else x @ w
            w_kept = w.copy() if input_delta else w
        else:
            x_kept, z, w_kept = (copy(x) if copy_input else x), x @ w, (copy(w) if input_delta else w)
        z += b  # z is ours: add the bias in place (a JAX array is rebound, not written)
        if apply is None or apply_np is None:
            return (x_kept, w_kept, z), z
        return (x_kept, w_kept, z), (apply_np(z) if on_numpy else apply(z))

    def bwd(m: DenseResidue, da: Array) -> tuple[DenseParams, Array | None]:
        # The checks cost a few attribute reads: the shapes that decide the results' shapes
        # before, and the results' shapes and dtypes after (a residue whose parts do not go
        # together makes numpy fail, or gives results of the wrong shape or dtype).
        try:
            x, w, z = m
            bad_m = w.shape != w_shape or z.shape[-1:] != out_tail
        except (TypeError, ValueError, AttributeError):
            bad_m = True
        if bad_m:
            raise residue_error(name, m)
        on_numpy = type(da) is np.ndarray
        if not ((da.dtype is dt or da.dtype == dt) if on_numpy else is_float_array(da, dt)) or da.shape != z.shape:
            raise delta_error(name, da, z)
        try:
            dz = da if grad is None else grad(z, da)
            if on_numpy and dz.ndim == 2:  # the common case, inline: no call more than numpy's
                dw, db = np.dot(x.T, dz), np.dot(ones(dz.shape[0], dt), dz)  # column_sum, inline
                ds = np.dot(dz, w.T) if input_delta else None
            else:
                dw = _weight_delta(x, dz, n_in, n_out)
                db = column_sum(dz if dz.ndim == 2 else reshape(dz, (-1, n_out)))
                ds = _times_transpose(dz, w) if input_delta else None
        except (TypeError, ValueError, AttributeError):
            raise residue_error(name, m) from None
        if on_numpy:
            bad = dw.shape != w_shape or (dw.dtype is not dt and dw.dtype != dt)
            bad = bad or (ds is not None and ds.dtype is not dt and ds.dtype != dt)
        else:
            bad = dw.shape != w_shape or not is_float_array(dw, dt) or (ds is not None and not is_float_array(ds, dt))
        if bad:
            raise residue_error(name, m)
        return tuple.__new__(DenseParams, (dw, db)), ds  # a named tuple without its generated __new__

    def init_params(rng: np.random.Generator) -> DenseParams:
        return DenseParams(init_weight(scheme, n_in, n_out, dt, rng), np.zeros(n_out, dt))

    return PreLens(fwd, bwd, name, init_params)


def _dense_params_error(lens: str, p: object, n_in: int, n_out: int, dt: np.dtype[Any]) -> E.PrelensError:
    dn = E.dtype_name(dt)
    if type(p) is not DenseParams:
        return E.must_be(
            lens, "parameters", f"DenseParams(weight {dn}[{n_in},{n_out}], bias {dn}[{n_out}])", E.describe(p)
        )
    w, b = p
    if not (is_float_array(w, dt) and w.shape == (n_in, n_out)):
        return param_error(lens, "weight", w, f"{dn}[{n_in},{n_out}]", dt)
    return param_error(lens, "bias", b, f"{dn}[{n_out}]", dt)
