"""Solutions to the exercises of notebook 01_prelenses."""

import numpy as np

from prelens import PreLens

# 1.1 a = p·s: the residue keeps what bwd needs, p and a copy of s (the caller may write into its
# array before the backward pass); one parameter touches every entry, so its delta sums over them.
scale = PreLens(
    lambda p, s: ((p, s.copy()), p * s),
    lambda m, da: (float(da @ m[1]), m[0] * da),
    name="scale",
)

# 1.2 tanh keeping its output y = tanh z: d tanh/dz = 1 − tanh² = 1 − y², so bwd needs y only.
activ_out = PreLens(
    lambda p, z: (float(np.tanh(z)), float(np.tanh(z))),
    lambda y, da: ((), float(da * (1 - y**2))),
    name="activ_out",
)

# 1.3 a = mean(s): ∂a/∂sᵢ = 1/n, so the residue is the length n alone.
mean_l = PreLens(
    lambda p, s: (len(s), float(np.mean(s))),
    lambda n, da: ((), np.full(n, da / n)),
    name="mean",
)

#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # dp left as an array: the parameter is one number, the delta must be too
    "scale": PreLens(lambda p, s: ((p, s.copy()), p * s), lambda m, da: (da * m[1], m[0] * da), name="scale"),
    # treats the stored output as if it were z, applying tanh twice
    "activ_out": PreLens(
        lambda p, z: (float(np.tanh(z)), float(np.tanh(z))),
        lambda y, da: ((), float(da * (1 - np.tanh(y) ** 2))),
        name="activ_out",
    ),
    # right numbers, but the whole input is kept in the residue
    "mean_l": PreLens(
        lambda p, s: (s.copy(), float(np.mean(s))), lambda s, da: ((), np.full(len(s), da / len(s))), name="mean"
    ),
}
