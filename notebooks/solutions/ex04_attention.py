"""Solutions to the exercises of notebook 04_attention."""

from typing import Any

import numpy as np

from prelens import PreLens


# 4.1 S = Q Kᵀ / √d_k: the backward pass needs both Q and K, so the residue keeps its own copies
def scores_l(d_k: int) -> PreLens:
    scale = 1 / np.sqrt(d_k)

    def fwd(p: Any, qk: Any) -> Any:
        q, k = qk
        return (q.copy(), k.copy()), scale * (q @ np.swapaxes(k, -1, -2))  # copies: the caller may reuse its arrays

    def bwd(m: Any, ds: Any) -> Any:
        q, k = m
        return (), (scale * (ds @ k), scale * (np.swapaxes(ds, -1, -2) @ q))

    return PreLens(fwd, bwd, name="scores")


# 4.2 PE[t, 2i] = sin(t ω_i), PE[t, 2i+1] = cos(t ω_i), ω_i = 10000^(−2i/d)
def sinusoidal(T: int, d: int) -> np.ndarray:
    t = np.arange(T)[:, None]
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    table = np.empty((T, d))
    table[:, 0::2] = np.sin(t * omega)
    table[:, 1::2] = np.cos(t * omega)
    return table


# 4.3 stage 3 is softmax @ id_pre_lens; its residue is (softmax's residue, ()), and the softmax keeps its output
def weights_from_residue(m: Any) -> Any:
    return m[3][0]


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # forgets the scale 1/√d_k
    "scores_l": lambda d_k: PreLens(
        lambda p, qk: (qk, qk[0] @ np.swapaxes(qk[1], -1, -2)),
        lambda m, ds: ((), (ds @ m[1], np.swapaxes(ds, -1, -2) @ m[0])),
        name="scores",
    ),
    # sines and cosines in the wrong columns
    "sinusoidal": lambda T, d: np.roll(sinusoidal(T, d), 1, axis=1),
    # the masked scores (stage 2), before the softmax
    "weights_from_residue": lambda m: m[2][0],
}
