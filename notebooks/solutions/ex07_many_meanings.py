"""Solutions to the exercises of notebook 07_many_meanings."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from prelens import PreLens, dimap_m, dimap_p, id_pre_lens, lunit, runit, unlunit, unrunit
from prelens.tambara import Rule, placeholder


# 7.1 a neuron with m inputs keeps (s, w) in linear_l (2m floats), nothing in bias_l, z in activ_l (1 float)
def residue_bytes(n_in: int, sizes: Sequence[int]) -> int:
    ins = [n_in, *sizes[:-1]]
    return sum(8 * n * (2 * m + 1) for m, n in zip(ins, sizes))


# 7.2 residue (p, s): a float and a vector; forward n multiplies; backward dp = Σ da·s (n) and ds = p·da (n)
scale_rule = Rule(
    forward=lambda p, s: ((placeholder(), placeholder(np.shape(s))), placeholder(np.shape(s))),
    backward=lambda dm, da: (placeholder(), placeholder(np.shape(da))),
    madds=lambda p, s: (int(np.size(s)), 2 * int(np.size(s))),
)


# 7.3 the post's fromTamb: run the TriLens on the identity pre-lens, then strip the units
def closure_from_tamb(tri: Any) -> PreLens:
    return dimap_m(runit, unrunit, dimap_p(unlunit, lunit, tri(id_pre_lens)))


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # forgets activ_l's residue: only linear_l's (s, w)
    "residue_bytes": lambda n_in, sizes: sum(16 * m * n for m, n in zip([n_in, *sizes[:-1]], sizes)),
    # counts one delta in the backward pass
    "scale_rule": Rule(scale_rule.forward, scale_rule.backward, lambda p, s: (int(np.size(s)), int(np.size(s)))),
    # the units never stripped: parameters ((), p) where from_tamb's are p
    "closure_from_tamb": lambda tri: tri(id_pre_lens),
}
