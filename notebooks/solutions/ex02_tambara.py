"""Solutions to the exercises of notebook 02_tambara."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prelens import (
    PreLens,
    TriLens,
    add_l,
    alpha,
    beta,
    dimap_m,
    dimap_p,
    dimap_s,
    first,
    id_pre_lens,
    lunit,
    runit,
    unlunit,
    unrunit,
)


# 2.1 the post's toTamb (PreLens/TriLens.hs): thread the residue, plug in the passes, absorb the parameters
def my_to_tamb(lens: PreLens) -> TriLens:
    def fw(ps: Any) -> Any:
        return lens.fwd(ps[0], ps[1])

    def bw(dm_da: Any) -> Any:
        return lens.bwd(dm_da[0], dm_da[1])

    return TriLens(lambda t: beta(dimap_s(fw, bw, alpha(t))), f"my_to_tamb({lens!r})")


# 2.2 beta(add_l) has parameters ((), b): unlunit makes ((), b) from b, lunit takes the delta back
bias_from_add = dimap_p(unlunit, lunit, beta(add_l))


# 2.3 run the TriLens in the forward-only module, and strip the units as from_tamb does
@dataclass(frozen=True)
class Fwd:
    run: Callable[[Any, Any], Any]

    def dimap_s(self, f: Any, g: Any) -> "Fwd":
        return Fwd(lambda p, s: self.run(p, f(s)))

    def dimap_p(self, f: Any, g: Any) -> "Fwd":
        return Fwd(lambda p, s: self.run(f(p), s))

    def dimap_m(self, f: Any, g: Any) -> "Fwd":
        return Fwd(lambda p, s: first(f)(self.run(p, s)))

    def alpha(self) -> "Fwd":
        def run(p: Any, ns: Any) -> Any:
            m, a = self.run(p, ns[1])
            return (ns[0], m), a

        return Fwd(run)

    def beta(self) -> "Fwd":
        return Fwd(lambda pr, s: self.run(pr[0], (pr[1], s)))


def forward_only(tri: TriLens, p: Any, s: Any) -> Any:
    t = dimap_m(runit, unrunit, dimap_p(unlunit, lunit, tri(Fwd(id_pre_lens.fwd))))
    return t.run(p, s)[1]


#: One plausible mistake per exercise; each check must reject it.
MISTAKES = {
    # the structure maps in the wrong order
    "my_to_tamb": lambda lens: TriLens(
        lambda t: alpha(dimap_s(lambda ps: lens.fwd(*ps), lambda d: lens.bwd(*d), beta(t))), "wrong"
    ),
    # the unit left in the parameters
    "bias_from_add": beta(add_l),
    # the units never stripped: the module expects parameters ((), p), and p alone does not fit
    "forward_only": lambda tri, p, s: tri(Fwd(id_pre_lens.fwd)).run(p, s)[1],
}
