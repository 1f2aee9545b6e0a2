"""The post's fan-out as a TriLens: the combinator the faithful level's ``layer`` is built with."""

from __future__ import annotations

from typing import Any

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import add_trees
from prelens.core._registry import constructor
from prelens.tambara._trilens import AnyTriLens, TriLens, dimap_m, dimap_p, dimap_s


@constructor
def branch_t(n: int) -> AnyTriLens:
    """The post's fan-out TriLens, built from dimaps (backward sums pointwise).

    Haskell (``PreLens/TriLens.hs``, with ``mconcat`` where this has the pointwise sum)::

        branch :: Monoid s => Int -> TriLens [s] [s] () () () () s s

    >>> from prelens import from_tamb
    >>> from_tamb(branch_t(3)).fwd((), 1.0)
    ((), [1.0, 1.0, 1.0])
    """
    n = _args.count("branch_t", "n", n)
    name = f"branch_t({n})"

    def accumulate(ds: list[Any]) -> Any:
        if not isinstance(ds, list) or len(ds) != n:
            raise E.list_length_error(name, "output delta", n, len(ds) if isinstance(ds, list) else E.describe_tree(ds))
        return add_trees(ds, name, "delta")

    def run(t: Any) -> Any:
        t = dimap_s(lambda s: [s] * n, accumulate, t)
        t = dimap_p(lambda p: p[0], lambda dp1: (dp1, ()), t)
        return dimap_m(lambda m1: ((), m1), lambda dm: dm[1], t)

    return TriLens(run, name)
