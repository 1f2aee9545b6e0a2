"""Solutions to the exercises of notebook 01b_optics."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from prelens import PreLens, dimap_m


@dataclass(frozen=True)
class PLens:
    fwd: Callable[[Any, Any], Any]
    bwd: Callable[[Any, Any, Any], Any]


# 1b.1 the trace, as the Haskell fwd' and bwd' (PreLens/PreLens.hs)
def to_plens(lens: PreLens) -> PLens:
    return PLens(
        lambda p, s: lens.fwd(p, s)[1],
        lambda p, s, da: lens.bwd(lens.fwd(p, s)[0], da),
    )


# 1b.2 the residue map r = σ runs at the end of the forward pass, or at the start of the backward pass
def _sigmoid(z: Any) -> Any:
    return 1 / (1 + np.exp(-z))


open_sigmoid = PreLens(lambda p, z: (z, float(_sigmoid(z))), lambda y, da: ((), da * y * (1 - y)), name="open_sigmoid")
sigmoid_pair = (
    dimap_m(_sigmoid, lambda y: y, open_sigmoid),  # keeps σ(z)
    dimap_m(lambda z: z, _sigmoid, open_sigmoid),  # keeps z, computes σ(z) in the backward pass
)


# 1b.3 the forward pass alone: alpha forgets the value carried past it
@dataclass(frozen=True)
class Forget:
    run: Callable[[Any], Any]

    def dimap(self, f: Callable[[Any], Any], g: Callable[[Any], Any]) -> "Forget":
        return Forget(lambda s: self.run(f(s)))

    def alpha(self) -> "Forget":
        return Forget(lambda ns: self.run(ns[1]))


forget = Forget  # the check's name for this exercise


@dataclass(frozen=True)
class _ForgetKeepingN:
    """A plausible mistake: alpha keeps the carried value beside the result."""

    run: Callable[[Any], Any]

    def dimap(self, f: Callable[[Any], Any], g: Callable[[Any], Any]) -> "_ForgetKeepingN":
        return _ForgetKeepingN(lambda s: self.run(f(s)))

    def alpha(self) -> "_ForgetKeepingN":
        return _ForgetKeepingN(lambda ns: (ns[0], self.run(ns[1])))


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # bwd hands the input s to the backward pass instead of the residue
    "to_plens": lambda lens: PLens(lambda p, s: lens.fwd(p, s)[1], lambda p, s, da: lens.bwd(s, da)),
    # the identity on both sides: the recomputing lens never applies σ, so its trace is wrong
    "sigmoid_pair": (dimap_m(_sigmoid, lambda y: y, open_sigmoid), dimap_m(lambda z: z, lambda z: z, open_sigmoid)),
    "forget": _ForgetKeepingN,
}
