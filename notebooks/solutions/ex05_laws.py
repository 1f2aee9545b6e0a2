"""Solutions to the exercises of notebook 05_laws."""

from typing import Any

import numpy as np

from prelens import PreLens, assoc, dimap_p, unassoc
from prelens.faithful import Para, neuron_l


# 5.1 a = log(1 + exp(w s)); with σ = d/dx log(1 + eˣ): ∂a/∂w = σ(w s) s, ∂a/∂s = σ(w s) w
def _softplus_fwd(w: np.ndarray, s: np.ndarray) -> Any:
    z = w * s
    return (w.copy(), s.copy(), 1 / (1 + np.exp(-z))), np.log1p(np.exp(z))


def _softplus_bwd(m: Any, da: np.ndarray) -> Any:
    w, s, sig = m
    return da * sig * s, da * sig * w


softplus = PreLens(_softplus_fwd, _softplus_bwd, name="softplus", init_fn=lambda rng: rng.standard_normal(3))

# 5.2 parameters (p_h, (p_g, p_f)) -> ((p_h, p_g), p_f) is unassoc;
#     residues ((m_f, m_g), m_h) -> (m_f, (m_g, m_h)) is assoc
reassoc = (unassoc, assoc)


# 5.3 dimap_p(f, g): f maps the new parameters to the old (θ -> Para), g the old delta to the new (Para -> θ)
def flat_neuron(n: int) -> PreLens:
    return dimap_p(
        lambda theta: Para(float(theta[0]), theta[1:]),
        lambda dp: np.concatenate([[dp.bias], dp.weight]),
        neuron_l(n),
    )


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # the chain rule's inner factor forgotten in ∂a/∂w
    "softplus": PreLens(
        _softplus_fwd,
        lambda m, da: (da * m[2], da * m[2] * m[0]),
        name="softplus",
        init_fn=lambda rng: rng.standard_normal(3),
    ),
    # the associator the wrong way round for the parameters
    "reassoc": (assoc, assoc),
    # the weights first and the bias last
    "flat_neuron": lambda n: dimap_p(
        lambda theta: Para(float(theta[-1]), theta[:-1]),
        lambda dp: np.concatenate([dp.weight, [dp.bias]]),
        neuron_l(n),
    ),
}
