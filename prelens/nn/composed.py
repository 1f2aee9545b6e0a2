"""``prelens.nn.composed``: the twins built by composition, and the pieces they are built from.

Each fast lens of :mod:`prelens.nn` that is fused for speed has a twin here written as the
composition it is, tested equal to it (same parameters, same outputs, same deltas); the
recurrent layers' twins are ``scan`` of the cells :func:`rnn_cell`, :func:`gru_cell`,
:func:`lstm_cell` from ``h0 = 0``. docs/api.md lists each twin and its pieces.

>>> import numpy as np
>>> from prelens import nn
>>> from prelens.nn import composed
>>> twin, fast = composed.feed_forward(4, 8), nn.feed_forward(4, 8)
>>> p, x = fast.init(0), np.ones((2, 3, 4))
>>> bool(np.allclose(twin.fwd(p, x)[1], fast.fwd(p, x)[1]))
True
"""

import numpy as np
import numpy.typing as npt

from prelens.core._lens import AnyLens
from prelens.core._registry import constructor
from prelens.nn import _recurrent
from prelens.nn._attention import (
    FaithfulAttentionParams,
    HeadParams,
    attention_head,
    attention_scores,
    causal_mask,
    concat_heads,
    merge_heads,
    split_heads,
    stack_heads,
    unstack_heads,
    weighted_sum,
)
from prelens.nn._attention import multi_head_attention_faithful as multi_head_attention
from prelens.nn._conv import conv1d_composed as conv1d
from prelens.nn._conv import conv2d_composed as conv2d
from prelens.nn._conv import patches
from prelens.nn._pool import avg_pool_composed as avg_pool
from prelens.nn._pool import max_pool_composed as max_pool
from prelens.nn._pool import window_max, window_mean
from prelens.nn._residual import residual_composed as residual
from prelens.nn._transformer import feed_forward_composed as feed_forward

__all__ = [
    "FaithfulAttentionParams",
    "HeadParams",
    "attention_head",
    "attention_scores",
    "avg_pool",
    "causal_mask",
    "concat_heads",
    "conv1d",
    "conv2d",
    "feed_forward",
    "gru_cell",
    "lstm_cell",
    "max_pool",
    "merge_heads",
    "multi_head_attention",
    "patches",
    "residual",
    "rnn_cell",
    "split_heads",
    "stack_heads",
    "unstack_heads",
    "weighted_sum",
    "window_max",
    "window_mean",
]


@constructor
def rnn_cell(n_in: int, n_hidden: int, *, nonlinearity: str = "tanh", dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The Elman cell ``(h, x) -> (h', h')``, ``h' = tanh(x W_ih + b_ih + h W_hh + b_hh)`` (or relu).

    ``h (..., H)``, ``x (..., n_in)``; parameters :class:`prelens.nn.RecurrentParams` (``G = 1``),
    as ``torch.nn.RNNCell``'s transposed. ``scan(rnn_cell(...), axis=1)`` from ``h0 = 0`` is the
    twin of :func:`prelens.nn.rnn`.

    >>> c = rnn_cell(3, 4)
    >>> m, (h, y) = c.fwd(c.init(0), (np.zeros((2, 4)), np.ones((2, 3))))
    >>> h.shape, bool((h == y).all())
    ((2, 4), True)
    """
    return _recurrent.cell("rnn", n_in, n_hidden, nonlinearity=nonlinearity, dtype=dtype)


@constructor
def gru_cell(n_in: int, n_hidden: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The GRU cell ``(h, x) -> (h', h')`` (PyTorch's ``GRUCell`` equations, gates ``r, z, n``).

    >>> c = gru_cell(3, 4)
    >>> c.fwd(c.init(0), (np.zeros((2, 4)), np.ones((2, 3))))[1][0].shape
    (2, 4)
    """
    return _recurrent.cell("gru", n_in, n_hidden, dtype=dtype)


@constructor
def lstm_cell(n_in: int, n_hidden: int, *, dtype: npt.DTypeLike = np.float64) -> AnyLens:
    """The LSTM cell ``((h, c), x) -> ((h', c'), h')`` (PyTorch's ``LSTMCell`` equations, gates ``i, f, g, o``).

    >>> c = lstm_cell(3, 4)
    >>> m, ((h, cc), y) = c.fwd(c.init(0), ((np.zeros((2, 4)), np.zeros((2, 4))), np.ones((2, 3))))
    >>> cc.shape, bool((h == y).all())
    ((2, 4), True)
    """
    return _recurrent.cell("lstm", n_in, n_hidden, dtype=dtype)
