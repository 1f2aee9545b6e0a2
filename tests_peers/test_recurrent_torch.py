"""rnn, gru, lstm and bidirectional equal torch.nn.RNN, GRU, LSTM (and bidirectional=True) from the same weights.

Outputs and gradients (the input's and every weight's), float64, to 1e-12 relative.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prelens.nn import RecurrentParams, bidirectional, gru, lstm, rnn

TORCH = {"rnn": torch.nn.RNN, "rnn relu": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}
OURS = {"rnn": rnn, "rnn relu": rnn, "gru": gru, "lstm": lstm}


def _params(m: torch.nn.Module, suffix: str = "") -> RecurrentParams:
    def get(name: str) -> np.ndarray:
        return getattr(m, f"{name}_l0{suffix}").detach().numpy().copy()

    return RecurrentParams(get("weight_ih").T.copy(), get("weight_hh").T.copy(), get("bias_ih"), get("bias_hh"))


def _grads(m: torch.nn.Module, suffix: str = "") -> RecurrentParams:
    def get(name: str) -> np.ndarray:
        return getattr(m, f"{name}_l0{suffix}").grad.numpy()

    return RecurrentParams(get("weight_ih").T, get("weight_hh").T, get("bias_ih"), get("bias_hh"))


def _close(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(theirs))))
    err = float(np.max(np.abs(ours - theirs))) / scale
    assert ours.shape == theirs.shape and err <= 1e-12, f"{what}: differs from torch by {err:.2e}"


@pytest.mark.parametrize("bi", [False, True], ids=["one way", "bidirectional"])
@pytest.mark.parametrize("kind", sorted(TORCH))
def test_outputs_and_gradients_equal_torch(kind: str, bi: bool) -> None:
    torch.manual_seed(0)
    n, t, f, h = 8, 40, 3, 6
    kw = {"nonlinearity": "relu"} if kind == "rnn relu" else {}
    m = TORCH[kind](f, h, batch_first=True, bidirectional=bi, dtype=torch.float64, **kw)
    rng = np.random.default_rng(0)
    xs, dys = rng.standard_normal((n, t, f)), rng.standard_normal((n, t, 2 * h if bi else h))
    x_t = torch.tensor(xs, requires_grad=True)
    y_t = m(x_t)[0]
    y_t.backward(torch.tensor(dys))

    layer = OURS[kind](f, h, **kw)
    if bi:
        layer = bidirectional(layer)
        p = (_params(m), _params(m, "_reverse"))
        theirs = (_grads(m), _grads(m, "_reverse"))
    else:
        p, theirs = _params(m), (_grads(m),)
    res, ys = layer.fwd(p, xs)
    dp, dxs = layer.bwd(res, dys)
    _close(ys, y_t.detach().numpy(), "output")
    _close(dxs, x_t.grad.numpy(), "input gradient")
    for direction, (ours, their) in enumerate(zip((dp,) if not bi else dp, theirs, strict=True)):
        for name, a, b in zip(RecurrentParams._fields, ours, their, strict=True):
            _close(a, b, f"{name} (direction {direction})")
