"""The structural isomorphisms of the monoidal product, and the lens of any isomorphism.

Each rearranges a nest of pairs (tuples or lists of two; not arrays or dicts). They are the
plumbing of every TriLens step, so each is one unpacking; a misfit names the isomorphism and its layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typing_extensions import TypeVar

from prelens import errors as E
from prelens.core import _args
from prelens.core._lens import AnyLens, PreLens

X = TypeVar("X")
Y = TypeVar("Y")
Z = TypeVar("Z")


def _misfit(fn: str, layout: str, x: Any) -> E.StructureError:
    return E.not_a_pair(fn, "its argument", layout, x)


def halves(fn: str, what: str, layout: str, x: Any) -> tuple[Any, Any]:
    """The two halves of ``x``, a tuple or list of two, or an error naming ``fn``, ``what`` and its ``layout``.

    >>> halves("scan", "its input", "(h0, xs)", [0.0, [1.0]])
    (0.0, [1.0])
    """
    if type(x) is tuple and len(x) == 2:
        return x  # the common case: the pair itself
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return x[0], x[1]
    raise E.not_a_pair(fn, what, layout, x)


def lunit(x: tuple[tuple[()], X]) -> X:
    """The left unit law: drop the unit on the left.

    Haskell: ``lunit :: ((), a) -> a``

    >>> lunit(((), 1))
    1
    """
    match x:
        case (_, a):
            return a
    raise _misfit("lunit", "((), a)", x)


def unlunit(x: X) -> tuple[tuple[()], X]:
    """The inverse of :func:`lunit`: put a unit on the left.

    Haskell: ``unLunit :: a -> ((), a)``

    >>> unlunit(1)
    ((), 1)
    """
    return (), x


def runit(x: tuple[X, tuple[()]]) -> X:
    """The right unit law: drop the unit on the right.

    Haskell: ``runit :: (a, ()) -> a``

    >>> runit((1, ()))
    1
    """
    match x:
        case (a, _):
            return a
    raise _misfit("runit", "(a, ())", x)


def unrunit(x: X) -> tuple[X, tuple[()]]:
    """The inverse of :func:`runit`: put a unit on the right.

    Haskell: ``unRunit :: a -> (a, ())``

    >>> unrunit(1)
    (1, ())
    """
    return x, ()


def assoc(x: tuple[tuple[X, Y], Z]) -> tuple[X, tuple[Y, Z]]:
    """The associator: re-nest a pair of pairs to the right.

    Haskell: ``assoc :: ((a, b), c) -> (a, (b, c))``

    >>> assoc(((1, 2), 3))
    (1, (2, 3))
    """
    match x:
        case ((a, b), c):
            return a, (b, c)
    raise _misfit("assoc", "((a, b), c)", x)


def unassoc(x: tuple[X, tuple[Y, Z]]) -> tuple[tuple[X, Y], Z]:
    """The inverse of :func:`assoc`: re-nest to the left.

    Haskell: ``unAssoc :: (a, (b, c)) -> ((a, b), c)``

    >>> unassoc((1, (2, 3)))
    ((1, 2), 3)
    """
    match x:
        case (a, (b, c)):
            return (a, b), c
    raise _misfit("unassoc", "(a, (b, c))", x)


def sym(x: tuple[X, Y]) -> tuple[Y, X]:
    """The symmetry: swap the two halves of a pair (its own inverse).

    Haskell: ``sym :: (a, b) -> (b, a)``

    >>> sym((1, 2))
    (2, 1)
    """
    match x:
        case (a, b):
            return b, a
    raise _misfit("sym", "(a, b)", x)


def skip_right(x: tuple[X, tuple[Y, Z]]) -> tuple[Y, tuple[X, Z]]:
    """Move ``x`` past ``b``, one level down on the right (its own inverse).

    Haskell: ``skipRight :: (x, (b, c)) -> (b, (x, c))``

    >>> skip_right((1, (2, 3)))
    (2, (1, 3))
    """
    match x:
        case (a, (b, c)):
            return b, (a, c)
    raise _misfit("skip_right", "(x, (b, c))", x)


def skip_left(x: tuple[tuple[X, Y], Z]) -> tuple[tuple[X, Z], Y]:
    """Move ``x`` past ``b``, one level down on the left (its own inverse).

    Haskell: ``skipLeft :: ((a, b), x) -> ((a, x), b)``

    >>> skip_left(((1, 2), 3))
    ((1, 3), 2)
    """
    match x:
        case ((a, b), c):
            return (a, c), b
    raise _misfit("skip_left", "((a, b), x)", x)


def first(f: Callable[[X], Y]) -> Callable[[tuple[X, Z]], tuple[Y, Z]]:
    """Map the left half of a pair (``first`` of ``Data.Bifunctor``, as the post uses it).

    Haskell: ``first :: (a -> a') -> (a, b) -> (a', b)``

    >>> first(str)((1, 2))
    ('1', 2)
    """
    _args.function("first", "f", f)

    def run(x: tuple[X, Z]) -> tuple[Y, Z]:
        match x:
            case (a, b):
                return f(a), b
        raise _misfit("first(f)", "(a, b)", x)

    return run


def second(f: Callable[[Y], Z]) -> Callable[[tuple[X, Y]], tuple[X, Z]]:
    """Map the right half of a pair (``second`` of ``Data.Bifunctor``, as the post uses it).

    Haskell: ``second :: (b -> b') -> (a, b) -> (a, b')``

    >>> second(str)((1, 2))
    (1, '2')
    """
    _args.function("second", "f", f)

    def run(x: tuple[X, Y]) -> tuple[X, Z]:
        match x:
            case (a, b):
                return a, f(b)
        raise _misfit("second(f)", "(a, b)", x)

    return run


def iso_lens(name: str, to: Callable[[Any], Any], back: Callable[[Any], Any]) -> AnyLens:
    """The lens of an isomorphism: ``to`` on values forward, ``back`` on deltas backward.

    Parameters ``()``, residue ``()``: ``fwd((), s) = ((), to(s))``, ``bwd((), da) = ((), back(da))``.

    >>> swap = iso_lens("swap", sym, sym)
    >>> swap.fwd((), (1, 2)), swap.bwd((), (3, 4))
    (((), (2, 1)), ((), (4, 3)))
    """
    _args.name("iso_lens", "name", name)
    _args.function("iso_lens", "to", to)
    _args.function("iso_lens", "back", back)

    def fwd(p: tuple[()], s: Any) -> tuple[tuple[()], Any]:
        return (), to(s)

    def bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], Any]:
        return (), back(da)

    return PreLens(fwd, bwd, name)


#: The lenses of the isomorphisms that 0.3 exported as ``assoc_l``, ``sym_l``, ...: ``iso_lens`` of the pair.
ISO_LENSES = {
    f"{name}_l": iso_lens(f"{name}_l", to, back)
    for name, to, back in (
        ("lunit", lunit, unlunit),
        ("unlunit", unlunit, lunit),
        ("runit", runit, unrunit),
        ("unrunit", unrunit, runit),
        ("assoc", assoc, unassoc),
        ("unassoc", unassoc, assoc),
        ("sym", sym, sym),
        ("skip_right", skip_right, skip_right),
        ("skip_left", skip_left, skip_left),
    )
}
lunit_l, unlunit_l, runit_l, unrunit_l, assoc_l, unassoc_l, sym_l, skip_right_l, skip_left_l = ISO_LENSES.values()
