"""Solutions to the exercises of notebook 09_convolution_and_recurrence."""

from typing import Any

import numpy as np

from prelens import PreLens
from prelens.core import tree_add


# 9.1 forward: y[:, t] = b + Σ_j x_pad[:, t·s + j] @ W[j]; its transpose scatters dy back, adding
def conv1d_backward(x: Any, weight: Any, dy: Any, stride: int, padding: int) -> tuple[Any, Any, Any]:
    k = weight.shape[0]
    x_pad = np.pad(x, ((0, 0), (padding, padding), (0, 0)))
    dx_pad = np.zeros_like(x_pad)
    dweight = np.zeros_like(weight)
    for t in range(dy.shape[1]):
        for j in range(k):
            i = t * stride + j  # the sample window t reads at offset j (in the padded series)
            dweight[j] += x_pad[:, i].T @ dy[:, t]  # (c_in, N) @ (N, c_out)
            dx_pad[:, i] += dy[:, t] @ weight[j].T  # add: overlapping windows share samples
    dbias = dy.sum(axis=(0, 1))
    return dweight, dbias, dx_pad[:, padding : padding + x.shape[1]]  # the padding's deltas dropped


# 9.2 mapAccumL: h threaded forward, dh threaded backward, the steps' parameter deltas summed
def my_scan(cell: PreLens) -> PreLens:
    def fwd(p: Any, h0_xs: tuple[Any, list[Any]]) -> tuple[list[Any], tuple[Any, list[Any]]]:
        h, xs = h0_xs
        residues, ys = [], []
        for x in xs:
            m, (h, y) = cell.fwd(p, (h, x))
            residues.append(m)
            ys.append(y)
        return residues, (h, ys)

    def bwd(residues: list[Any], delta: tuple[Any, list[Any]]) -> tuple[Any, tuple[Any, list[Any]]]:
        dh, dys = delta
        dp, dxs = None, [None] * len(residues)
        for t in reversed(range(len(residues))):
            dp_t, (dh, dxs[t]) = cell.bwd(residues[t], (dh, dys[t]))
            dp = dp_t if dp is None else tree_add(dp, dp_t)
        return dp, (dh, dxs)

    return PreLens(fwd, bwd, f"my_scan({cell!r})", cell.init_fn)


# 9.3 a kernel of k taps dilated by d spans d·(k − 1) + 1 samples of the padded series
def conv_length(length: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (length + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _overwriting_backward(x: Any, weight: Any, dy: Any, stride: int, padding: int) -> tuple[Any, Any, Any]:
    """The mistake of 9.1: ``=`` where overlapping windows must add."""
    dweight, dbias, _ = conv1d_backward(x, weight, dy, stride, padding)
    dx_pad = np.zeros((x.shape[0], x.shape[1] + 2 * padding, x.shape[2]))
    for t in range(dy.shape[1]):
        for j in range(weight.shape[0]):
            dx_pad[:, t * stride + j] = dy[:, t] @ weight[j].T
    return dweight, dbias, dx_pad[:, padding : padding + x.shape[1]]


def _last_delta_scan(cell: PreLens) -> PreLens:
    """The mistake of 9.2: the parameter delta of one step (the first, reached last) instead of their sum."""
    right = my_scan(cell)

    def bwd(residues: list[Any], delta: tuple[Any, list[Any]]) -> tuple[Any, tuple[Any, list[Any]]]:
        dh, dys = delta
        dxs: list[Any] = [None] * len(residues)
        for t in reversed(range(len(residues))):
            dp, (dh, dxs[t]) = cell.bwd(residues[t], (dh, dys[t]))
        return dp, (dh, dxs)

    return PreLens(right.fwd, bwd, "last_delta_scan", cell.init_fn)


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # dx[i] = ... instead of dx[i] += ...: where windows overlap, the last window's delta wins
    "conv1d_backward": _overwriting_backward,
    # dp = dp_t instead of dp += dp_t: the parameters are shared, their deltas add up over the steps
    "my_scan": _last_delta_scan,
    # the notebook's formula, without dilation: a dilated kernel spans more than k samples
    "conv_length": lambda length, kernel, stride, padding, dilation: (length + 2 * padding - kernel) // stride + 1,
}
