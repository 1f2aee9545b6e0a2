"""Recurrent layers: ``rnn``, ``gru``, ``lstm`` (PyTorch's gate equations), and ``bidirectional``.

A recurrent layer is a *cell* ``(h, x) -> (h', h')`` unrolled over time (docs/api.md, "Recurrent layers").
The per-step formulas (:func:`_step`, :func:`_step_back`) are written once and shared by the cells
(:mod:`prelens.nn.composed`) and the layers, so the twin test compares the plumbing and the torch tests
the formulas.

The equations (``σ`` the logistic function, ``⊙`` elementwise, ``[·]_k`` gate ``k``'s block
of ``H`` columns)::

    rnn:   h' = tanh(x W_ih + b_ih + h W_hh + b_hh)          (or relu)
    gru:   r = σ([x W_ih + b_ih]_r + [h W_hh + b_hh]_r)
           z = σ([x W_ih + b_ih]_z + [h W_hh + b_hh]_z)
           n = tanh([x W_ih + b_ih]_n + r ⊙ [h W_hh + b_hh]_n)
           h' = (1 − z) ⊙ n + z ⊙ h
    lstm:  i, f, g, o = σ, σ, tanh, σ of the blocks of x W_ih + b_ih + h W_hh + b_hh
           c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')

>>> import numpy as np
>>> layer = gru(1, 6)
>>> layer
gru(1→6)
>>> m, ys = layer.fwd(layer.init(0), np.ones((2, 5, 1)))
>>> ys.shape
(2, 5, 6)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import copy, namespace
from prelens.backend._loop import as_steps, scan_loop
from prelens.core import _args as A
from prelens.core._check import ANY, LIKE_OUTPUT, Arr, Expects, Like, Same
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._registry import constructor
from prelens.nn._activations import _sigmoid_apply
from prelens.nn._fastcheck import dtype_suffix

__all__ = ["RecurrentParams", "bidirectional", "gru", "lstm", "rnn"]

Array = Any

#: Gates per kind of cell (the ``G`` of ``G·H`` columns).
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
#: How many activations (each ``(..., H)``) one step keeps for its backward pass, by kind.
SAVED = {"rnn": 2, "gru": 5, "lstm": 7}
NONLINEARITIES = ("tanh", "relu")


class RecurrentParams(NamedTuple):
    """The parameters of a recurrent cell or layer, PyTorch's transposed.

    ``weight_ih`` ``(n_in, G·H)``, ``weight_hh`` ``(H, G·H)``, ``bias_ih`` and ``bias_hh``
    ``(G·H,)``; ``G`` is 1 (rnn), 3 (gru: ``r, z, n``) or 4 (lstm: ``i, f, g, o``). From a
    ``torch.nn.GRU`` ``m``: ``RecurrentParams(m.weight_ih_l0.T, m.weight_hh_l0.T, m.bias_ih_l0,
    m.bias_hh_l0)`` (as numpy arrays).

    >>> from prelens.core import tree_shapes
    >>> tree_shapes(gru(2, 3).init(0))
    RecurrentParams(weight_ih='f64[2,9]', weight_hh='f64[3,9]', bias_ih='f64[9]', bias_hh='f64[9]')
    """

    weight_ih: Array
    weight_hh: Array
    bias_ih: Array
    bias_hh: Array


# ------------------------------------------------------------------ the per-step formulas


def _step(kind: str, relu: bool, xp: Any, gi: Array, state: Any, w_hh: Array, b_hh: Array, n: int) -> tuple[Any, Any]:
    """One step forward: ``gi = x W_ih + b_ih`` and the state give ``(new state, saved)``."""
    if kind == "lstm":
        h, c = state
        g = gi + h @ w_hh + b_hh
        i, f = _sigmoid_apply(g[..., :n]), _sigmoid_apply(g[..., n : 2 * n])
        gg, o = xp.tanh(g[..., 2 * n : 3 * n]), _sigmoid_apply(g[..., 3 * n :])
        c2 = f * c + i * gg
        tc = xp.tanh(c2)
        return (o * tc, c2), (h, c, i, f, gg, o, tc)
    h = state
    gh = h @ w_hh + b_hh
    if kind == "rnn":
        pre = gi + gh
        h2 = xp.where(pre > 0.0, pre, 0.0 * pre) if relu else xp.tanh(pre)
        return h2, (h, h2)
    r = _sigmoid_apply(gi[..., :n] + gh[..., :n])
    z = _sigmoid_apply(gi[..., n : 2 * n] + gh[..., n : 2 * n])
    ghn = gh[..., 2 * n :]
    nn_ = xp.tanh(gi[..., 2 * n :] + r * ghn)
    return nn_ + z * (h - nn_), (h, r, z, nn_, ghn)


def _step_back(kind: str, relu: bool, xp: Any, saved: Any, dh: Array, dc: Array | None) -> tuple[Array, Array, Any]:
    """One step backward: ``dh`` (and ``dc``) give the deltas of ``x W_ih + b_ih`` and ``h W_hh + b_hh``, and
    what reaches the old state other than through ``W_hh`` (rnn: ``None``; gru: ``z ⊙ dh``; lstm: ``dc_old``)."""
    if kind == "rnn":
        _, h2 = saved
        d = xp.where(h2 > 0.0, dh, 0.0 * dh) if relu else dh * (1.0 - h2 * h2)
        return d, d, None
    if kind == "gru":
        h, r, z, n_, ghn = saved
        dpre_n = dh * (1.0 - z) * (1.0 - n_ * n_)
        dpre_r = dpre_n * ghn * r * (1.0 - r)
        dpre_z = dh * (h - n_) * z * (1.0 - z)
        dgi = xp.concat([dpre_r, dpre_z, dpre_n], axis=-1)
        dgh = xp.concat([dpre_r, dpre_z, dpre_n * r], axis=-1)
        return dgi, dgh, dh * z
    h, c, i, f, gg, o, tc = saved
    dcc = dh * o * (1.0 - tc * tc)
    if dc is not None:
        dcc = dcc + dc
    d = xp.concat(
        [dcc * gg * i * (1.0 - i), dcc * c * f * (1.0 - f), dcc * i * (1.0 - gg * gg), dh * tc * o * (1.0 - o)],
        axis=-1,
    )
    return d, d, dcc * f


def _flat(x: Array, k: int) -> Array:
    """``x`` with its leading axes flattened: ``(-1, k)``."""
    return x if len(x.shape) == 2 else namespace(x).reshape(x, (-1, k))


def _setup(fn: str, kind: str, n_in: Any, n_hidden: Any, dtype: Any, nonlinearity: str) -> tuple[Any, ...]:
    """A cell's or layer's checked arguments, ``G·H``, name, parameter patterns and PyTorch's initialisation
    (every weight and bias uniform on ``±1/√H``): ``(n_in, H, dtype, relu, G·H, name, patterns, init)``."""
    n_in, n = A.count(fn, "n_in", n_in), A.count(fn, "n_hidden", n_hidden)
    dt = A.float_dtype(fn, "dtype", dtype)
    if nonlinearity not in NONLINEARITIES:
        raise E.not_one_of(fn, "nonlinearity", NONLINEARITIES, nonlinearity)
    relu, gn = nonlinearity == "relu", GATES[kind] * n
    shapes = ((n_in, gn), (n, gn), (gn,), (gn,))
    bound = 1.0 / math.sqrt(n)

    def init(rng: np.random.Generator) -> RecurrentParams:
        return RecurrentParams(*(rng.uniform(-bound, bound, s).astype(dt) for s in shapes))

    name = f"{fn}({n_in}→{n}{', relu' if relu else ''}{dtype_suffix(dt)})"
    return n_in, n, dt, relu, gn, name, RecurrentParams(*(Arr(dt, *s) for s in shapes)), init


# ------------------------------------------------------------------ the cells


def cell(
    kind: str, n_in: int, n_hidden: int, *, nonlinearity: str = "tanh", dtype: npt.DTypeLike = np.float64
) -> AnyLens:
    """The cell ``(h, x) -> (h', h')`` of ``kind`` (``"rnn"``, ``"gru"``, ``"lstm"``: ``h`` is ``(h, c)``), for
    :func:`prelens.nn.composed.rnn_cell` and its siblings; parameter deltas summed over the leading axes."""
    n_in, n, dt, relu, gn, name, params, init = _setup(f"{kind}_cell", kind, n_in, n_hidden, dtype, nonlinearity)

    def fwd(p: RecurrentParams, s: Any) -> tuple[Any, Any]:
        w_ih, w_hh, b_ih, b_hh = p
        state, x = s
        xp = namespace(x)
        state = (copy(state[0]), copy(state[1])) if kind == "lstm" else copy(state)
        state2, saved = _step(kind, relu, xp, x @ w_ih + b_ih, state, w_hh, b_hh, n)
        h2 = state2[0] if kind == "lstm" else state2
        return (copy(x), copy(w_ih), copy(w_hh), saved), (state2, h2)

    def bwd(m: Any, da: Any) -> tuple[RecurrentParams, Any]:
        x, w_ih, w_hh, saved = m
        dstate, dy = da
        xp = namespace(dy)
        dh_in, dc_in = dstate if kind == "lstm" else (dstate, None)  # the deltas of the state this step made
        dgi, dgh, direct = _step_back(kind, relu, xp, saved, dh_in + dy, dc_in)
        h = saved[0]
        dgi2, dgh2 = _flat(dgi, gn), _flat(dgh, gn)
        dp = RecurrentParams(_flat(x, n_in).T @ dgi2, _flat(h, n).T @ dgh2, xp.sum(dgi2, axis=0), xp.sum(dgh2, axis=0))
        dh_out = dgh @ w_hh.T  # the deltas of the state it was given: through W_hh, and direct
        ds_state = (dh_out, direct) if kind == "lstm" else (dh_out if direct is None else dh_out + direct)
        return dp, (ds_state, dgi @ w_ih.T)

    batch = Same("B")  # the state's leading axes are the input's (as PyTorch's cells: no broadcasting)
    h_pattern = Arr(dt, batch, n)
    state = (h_pattern, h_pattern) if kind == "lstm" else h_pattern
    # the residue (x, W_ih, W_hh, saved): x has the dtype; the output's shape is that of the step's last
    # activation (rnn h', gru n, lstm tanh(c')): (*B, H)
    last = {"rnn": 1, "gru": 3, "lstm": 6}[kind]
    like = Like(lambda m: (m[0], tuple(m[3][last].shape)))
    kept = tuple(Arr(dt, ..., n) for _ in range(SAVED[kind]))  # the step's activations
    expects = Expects(
        params=params,
        input=(state, Arr(dt, batch, n_in)),
        delta=((like, like) if kind == "lstm" else like, like),  # (h', y) or ((h', c'), y)
        residue=(Arr(dt, ..., n_in), params.weight_ih, params.weight_hh, kept),
    )
    return PreLens(fwd, bwd, name, init, expects=expects)


# ------------------------------------------------------------------ the fast layers


def _layer(kind: str, n_in: Any, n_hidden: Any, *, nonlinearity: str = "tanh", dtype: Any = np.float64) -> AnyLens:
    n_in, n, dt, relu, gn, name, params, init = _setup(kind, kind, n_in, n_hidden, dtype, nonlinearity)

    def fwd(p: RecurrentParams, xs: Array) -> tuple[Any, Array]:
        w_ih, w_hh, b_ih, b_hh = p
        xp = namespace(xs)
        batch, steps, _ = xs.shape
        if steps == 0:  # what the input's pattern cannot say
            raise E.lens_shape_error(name, "input", f"{expects.input} with at least one time step", E.describe(xs))
        gis = xp.reshape(_flat(xs, n_in) @ w_ih + b_ih, (batch, steps, gn))
        h = xp.zeros_like(gis[:, 0, :n])

        def one(state: Any, gi: Array) -> tuple[Any, Any]:
            state, s = _step(kind, relu, xp, gi, state, w_hh, b_hh, n)
            return state, (state[0] if kind == "lstm" else state, s)

        _, (hs, saved) = scan_loop(one, (h, h) if kind == "lstm" else h, gis, axis=1, keep=(1,))
        return (copy(xs), copy(w_ih), copy(w_hh), saved), hs

    def bwd(m: Any, dys: Array) -> tuple[RecurrentParams, Array]:
        xs, w_ih, w_hh, saved = m
        xp = namespace(dys)
        batch, steps, _ = xs.shape
        w_hh_t = w_hh.T

        def one(carry: Any, ds: Any) -> tuple[Any, Any]:
            # carry: what reaches this step's h from the later steps, as (through W_hh, direct)
            (dh_w, direct), (dy, s) = carry, ds
            dh = dh_w + dy
            if kind == "gru":
                dh = dh + direct
            dgi, dgh, direct = _step_back(kind, relu, xp, s, dh, direct if kind == "lstm" else None)
            return (dgh @ w_hh_t, direct), (dgi, dgh if kind == "gru" else None, s[0])

        zero = xp.zeros_like(dys[:, 0, :])
        start = (zero, None if kind == "rnn" else zero)
        # step 0's carry out (the delta of h0 = 0, a constant) is not used
        _, (dgis, dghs, hs) = scan_loop(one, start, (dys, as_steps(saved)), axis=1, reverse=True)
        dgi_all = _flat(dgis, gn)  # (N·T, G·H)
        dxs = xp.reshape(dgi_all @ w_ih.T, (batch, steps, n_in))
        dw_ih = _flat(xs, n_in).T @ dgi_all
        db_ih = xp.sum(dgi_all, axis=0)
        db_hh = xp.sum(_flat(dghs, gn), axis=0) if kind == "gru" else copy(db_ih)  # not one array twice
        # h_{t-1} against step t's delta, for t >= 1 (h0 = 0 adds nothing; one step: a zero product)
        dw_hh = _flat(hs[:, 1:, :], n).T @ _flat((dghs if kind == "gru" else dgis)[:, 1:, :], gn)
        return RecurrentParams(dw_ih, dw_hh, db_ih, db_hh), dxs

    like = Like(lambda m: (m[0], (*m[0].shape[:2], n)))  # residue (xs, W_ih, W_hh, saved): (N, T, H), xs's dtype
    expects = Expects(
        params=params,
        input=Arr(dt, "N", "T", n_in),  # batch first (PyTorch's batch_first=True), as errors show
        delta=like,
        residue=(Arr(dt, "N", "T", n_in), params.weight_ih, params.weight_hh, ANY),
    )
    return PreLens(fwd, bwd, name, init, expects=expects)


@constructor
def rnn(n_in: int, n_hidden: int, *, nonlinearity: str = "tanh", dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The Elman RNN layer ``h' = tanh(x W_ih + b_ih + h W_hh + b_hh)``: ``(N, T, n_in) -> (N, T, H)``.

    ``nonlinearity="relu"`` for ``max(·, 0)``. ``h0 = 0``; the output is every step's ``h``.
    Equal to ``torch.nn.RNN(n_in, H, batch_first=True)`` from the same weights
    (:class:`RecurrentParams`); the twin is ``scan(rnn_cell(...), axis=1)`` from ``h0 = 0``.

    >>> import numpy as np
    >>> rnn(3, 4, nonlinearity="relu").fwd(rnn(3, 4).init(0), np.ones((2, 5, 3)))[1].shape
    (2, 5, 4)
    """
    return _layer("rnn", n_in, n_hidden, nonlinearity=nonlinearity, dtype=dtype)


@constructor
def gru(n_in: int, n_hidden: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The GRU layer (PyTorch's equations, gates ``r, z, n``): ``(N, T, n_in) -> (N, T, H)``, ``h0 = 0``.

    Equal to ``torch.nn.GRU(n_in, H, batch_first=True)`` from the same weights; the twin is
    ``scan(gru_cell(...), axis=1)`` from ``h0 = 0``.

    >>> import numpy as np
    >>> gru(3, 4).fwd(gru(3, 4).init(0), np.ones((2, 5, 3)))[1].shape
    (2, 5, 4)
    """
    return _layer("gru", n_in, n_hidden, dtype=dtype)


@constructor
def lstm(n_in: int, n_hidden: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The LSTM layer (PyTorch's equations, gates ``i, f, g, o``): ``(N, T, n_in) -> (N, T, H)``.

    ``h0 = c0 = 0``; the output is every step's ``h``. Equal to
    ``torch.nn.LSTM(n_in, H, batch_first=True)`` from the same weights.

    >>> import numpy as np
    >>> lstm(3, 4).fwd(lstm(3, 4).init(0), np.ones((2, 5, 3)))[1].shape
    (2, 5, 4)
    """
    return _layer("lstm", n_in, n_hidden, dtype=dtype)


@constructor
def bidirectional(layer: AnyLens) -> AnyLens:
    """``layer`` run forward and backward in time, outputs side by side: ``(N, T, F) -> (N, T, 2H)``.

    The same as ``copy_l >> (layer @ (reverse >> layer >> reverse)) >> concat`` (time on axis 1,
    features concatenated on the last axis, forward first, as PyTorch's ``bidirectional=True``).
    Parameters ``(forward_params, backward_params)``, each ``layer``'s.

    >>> import numpy as np
    >>> bi = bidirectional(gru(1, 6))
    >>> bi
    bidirectional(gru(1→6))
    >>> bi.fwd(bi.init(0), np.ones((2, 40, 1)))[1].shape
    (2, 40, 12)
    """
    layer = as_lens("bidirectional", "layer", layer)
    fwd1, bwd1 = layer.fwd, layer.bwd

    def fwd(p: tuple[Any, Any], xs: Array) -> tuple[Any, Array]:
        pf, pb = p
        xp = namespace(xs)
        mf, yf = fwd1(pf, xs)
        mb, yb = fwd1(pb, xp.flip(xs, axis=1))
        return (mf, mb), xp.concat([yf, xp.flip(yb, axis=1)], axis=-1)

    def bwd(m: Any, dys: Array) -> tuple[tuple[Any, Any], Array]:
        mf, mb = m
        xp = namespace(dys)
        k = dys.shape[-1] // 2
        dpf, dxf = bwd1(mf, dys[..., :k])
        dpb, dxb = bwd1(mb, xp.flip(dys[..., k:], axis=1))
        return (dpf, dpb), dxf + xp.flip(dxb, axis=1)

    init_one = layer.init_fn
    init = None if init_one is None else (lambda rng: (init_one(rng), init_one(rng)))
    e = layer.expects
    delta = LIKE_OUTPUT
    if isinstance(e.delta, Like) and not e.delta.or_none:  # the layer's (N, T, H), from the forward residue
        of = e.delta.of

        def both(m: Any) -> tuple[Any, Any]:
            t, shape = of(m[0])
            return t, (*shape[:-1], 2 * shape[-1])

        delta = Like(both)
    expects = Expects(params=(e.params, e.params), input=e.input, delta=delta)
    return PreLens(fwd, bwd, f"bidirectional({layer!r})", init, "bidirectional", (layer,), expects)
