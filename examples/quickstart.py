"""A neuron by hand: three pre-lenses, composed, traced, and checked against the laws."""

import numpy as np

from prelens import PreLens, from_tamb, to_tamb, tri_compose, vjp
from prelens.testing import check_lens_laws, check_vjp

linear = PreLens(
    lambda w, s: ((s.copy(), w.copy()), w @ s),  # the residue (s, w), as the post's linearL: its own copy
    lambda m, da: (da * m[0], da * m[1]),
    name="linear",
    init_fn=lambda rng: rng.standard_normal(3),
)
bias = PreLens(lambda b, s: ((), s + b), lambda m, da: (da, da), name="bias", init_fn=lambda rng: 0.0)
activ = PreLens(lambda p, s: (s, np.tanh(s)), lambda z, da: ((), da * (1 - np.tanh(z) ** 2)), name="activ")

neuron = linear >> bias >> activ
print("lens:      ", neuron)
p = neuron.init(0)  # parameters nest as (p_activ, (p_bias, p_linear)): the later lens first
s = np.array([2.0, 3.0, -1.0])
a, pullback = vjp(neuron, p, s)
dp, ds = pullback(1.0)
print("output:    ", round(float(a), 6))
print("dp:        ", dp)
print("ds:        ", ds)

tri = tri_compose(tri_compose(to_tamb(linear), to_tamb(bias)), to_tamb(activ))
print("TriLens:   ", tri, "->", round(float(from_tamb(tri).fwd(p, s)[1]), 6))

check_vjp(neuron, p, s)
check_lens_laws(neuron, p, s)
print("laws:       all hold, and bwd matches finite differences")
