"""The structural isomorphisms of the monoidal product, as functions and as lenses.

Each function rearranges a nest of pairs; each ``*_l`` lens does the same to its
input on the forward pass and the inverse to the delta on the backward pass. The
lenses have parameters ``()`` and residue ``()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typing_extensions import TypeVar

from prelens.core import _args
from prelens import errors as E
from prelens.core._lens import AnyLens, PreLens

X = TypeVar("X")
Y = TypeVar("Y")
Z = TypeVar("Z")


def _two(x: Any) -> tuple[Any, Any]:
    """``x`` if it is a pair (a tuple or list of two), else ``TypeError``: dicts and strings do not unpack here."""
    if type(x) is tuple and len(x) == 2:  # the plumbing's own pairs: the fast path
        return x  # a plain tuple of two is the pair itself
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return x[0], x[1]
    raise TypeError("not a pair")  # iso_lens and from_tamb turn it into a named error


# The isos come twice. The private ones (``_lunit``, ...) are the plumbing of the TriLenses:
# on a value that is not the nest of pairs they rearrange they raise a bare ``TypeError``,
# which ``from_tamb`` and ``iso_lens`` report as the error of the whole lens. The public
# ones are the same functions for users: they name themselves and the layout they expected.


def _public(fn: str, layout: str, iso: Callable[[Any], Any], x: Any) -> Any:
    try:
        return iso(x)
    except TypeError:
        raise E.not_a_pair(fn, "its argument", layout, x) from None


def _lunit(x: Any) -> Any:
    return _two(x)[1]


def _unlunit(x: Any) -> Any:
    return (), x


def _runit(x: Any) -> Any:
    return _two(x)[0]


def _unrunit(x: Any) -> Any:
    return x, ()


def _assoc(x: Any) -> Any:
    ab, c = _two(x)
    a, b = _two(ab)
    return a, (b, c)


def _unassoc(x: Any) -> Any:
    a, bc = _two(x)
    b, c = _two(bc)
    return (a, b), c


def _sym(x: Any) -> Any:
    a, b = _two(x)
    return b, a


def _skip_right(x: Any) -> Any:
    a, bc = _two(x)
    b, c = _two(bc)
    return b, (a, c)


def _skip_left(x: Any) -> Any:
    ab, c = _two(x)
    a, b = _two(ab)
    return (a, c), b


def _first(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        if type(x) is tuple and len(x) == 2:  # the plumbing's own pairs: the fast path
            return f(x[0]), x[1]
        a, b = _two(x)
        return f(a), b

    return run


def _second(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        if type(x) is tuple and len(x) == 2:
            return x[0], f(x[1])
        a, b = _two(x)
        return a, f(b)

    return run


def lunit(x: tuple[tuple[()], X]) -> X:
    """The left unit law: drop the unit on the left.

    Haskell::

        lunit :: ((), a) -> a

    >>> lunit(((), 1))
    1
    """
    out: X = _public("lunit", "((), a)", _lunit, x)
    return out


def unlunit(x: X) -> tuple[tuple[()], X]:
    """The inverse of :func:`lunit`: put a unit on the left.

    Haskell::

        unLunit :: a -> ((), a)

    >>> unlunit(1)
    ((), 1)
    """
    return (), x


def runit(x: tuple[X, tuple[()]]) -> X:
    """The right unit law: drop the unit on the right.

    Haskell::

        runit :: (a, ()) -> a

    >>> runit((1, ()))
    1
    """
    out: X = _public("runit", "(a, ())", _runit, x)
    return out


def unrunit(x: X) -> tuple[X, tuple[()]]:
    """The inverse of :func:`runit`: put a unit on the right.

    Haskell::

        unRunit :: a -> (a, ())

    >>> unrunit(1)
    (1, ())
    """
    return x, ()


def assoc(x: tuple[tuple[X, Y], Z]) -> tuple[X, tuple[Y, Z]]:
    """The associator: re-nest a pair of pairs to the right.

    Haskell::

        assoc :: ((a, b), c) -> (a, (b, c))

    >>> assoc(((1, 2), 3))
    (1, (2, 3))
    """
    out: tuple[X, tuple[Y, Z]] = _public("assoc", "((a, b), c)", _assoc, x)
    return out


def unassoc(x: tuple[X, tuple[Y, Z]]) -> tuple[tuple[X, Y], Z]:
    """The inverse of :func:`assoc`: re-nest to the left.

    Haskell::

        unAssoc :: (a, (b, c)) -> ((a, b), c)

    >>> unassoc((1, (2, 3)))
    ((1, 2), 3)
    """
    out: tuple[tuple[X, Y], Z] = _public("unassoc", "(a, (b, c))", _unassoc, x)
    return out


def sym(x: tuple[X, Y]) -> tuple[Y, X]:
    """The symmetry: swap the two halves of a pair (its own inverse).

    Haskell::

        sym :: (a, b) -> (b, a)

    >>> sym((1, 2))
    (2, 1)
    """
    out: tuple[Y, X] = _public("sym", "(a, b)", _sym, x)
    return out


def skip_right(x: tuple[X, tuple[Y, Z]]) -> tuple[Y, tuple[X, Z]]:
    """Move ``x`` past ``b``, one level down on the right (its own inverse).

    Haskell::

        skipRight :: (x, (b, c)) -> (b, (x, c))

    >>> skip_right((1, (2, 3)))
    (2, (1, 3))
    """
    out: tuple[Y, tuple[X, Z]] = _public("skip_right", "(x, (b, c))", _skip_right, x)
    return out


def skip_left(x: tuple[tuple[X, Y], Z]) -> tuple[tuple[X, Z], Y]:
    """Move ``x`` past ``b``, one level down on the left (its own inverse).

    Haskell::

        skipLeft :: ((a, b), x) -> ((a, x), b)

    >>> skip_left(((1, 2), 3))
    ((1, 3), 2)
    """
    out: tuple[tuple[X, Z], Y] = _public("skip_left", "((a, b), x)", _skip_left, x)
    return out


def first(f: Callable[[X], Y]) -> Callable[[tuple[X, Z]], tuple[Y, Z]]:
    """Map the left half of a pair (``first`` of ``Data.Bifunctor``).

    Haskell::

        first :: (a -> a') -> (a, b) -> (a', b)
        first f (a, b) = (f a, b)

    >>> first(str)((1, 2))
    ('1', 2)
    """
    _args.function("first", "f", f)

    def run(x: tuple[X, Z]) -> tuple[Y, Z]:
        a, b = _public("first(f)", "(a, b)", _two, x)
        return f(a), b

    return run


def second(f: Callable[[Y], Z]) -> Callable[[tuple[X, Y]], tuple[X, Z]]:
    """Map the right half of a pair (``second`` of ``Data.Bifunctor``).

    Haskell::

        second :: (b -> b') -> (a, b) -> (a, b')
        second f (a, b) = (a, f b)

    >>> second(str)((1, 2))
    (1, '2')
    """
    _args.function("second", "f", f)

    def run(x: tuple[X, Y]) -> tuple[X, Z]:
        a, b = _public("second(f)", "(a, b)", _two, x)
        return a, f(b)

    return run


def iso_lens(name: str, to: Callable[[Any], Any], back: Callable[[Any], Any]) -> AnyLens:
    """The lens of an isomorphism: ``to`` on values forward, ``back`` on deltas backward.

    Haskell::

        iso_lens :: String -> (s -> a) -> (da -> ds) -> PreLens a da () () () () s ds
        iso_lens _ to back = PreLens (\\((), s) -> ((), to s)) (\\((), da) -> ((), back da))

    >>> iso_lens("sym", sym, sym).fwd((), (1, 2))
    ((), (2, 1))
    """

    _args.name("iso_lens", "name", name)
    _args.function("iso_lens", "to", to)
    _args.function("iso_lens", "back", back)

    def fwd(p: tuple[()], s: Any) -> tuple[tuple[()], Any]:
        try:
            return (), to(s)
        except (TypeError, ValueError):  # not the nest of pairs this iso rearranges
            raise E.must_be(name, "input", "the nest of pairs it rearranges", E.describe_tree(s)) from None

    def bwd(dm: tuple[()], da: Any) -> tuple[tuple[()], Any]:
        try:
            return (), back(da)
        except (TypeError, ValueError):
            raise E.must_be(name, "output delta", "the nest of pairs it rearranges", E.describe_tree(da)) from None

    return PreLens(fwd, bwd, name)


lunit_l = iso_lens("lunit_l", _lunit, _unlunit)
unlunit_l = iso_lens("unlunit_l", _unlunit, _lunit)
runit_l = iso_lens("runit_l", _runit, _unrunit)
unrunit_l = iso_lens("unrunit_l", _unrunit, _runit)
assoc_l = iso_lens("assoc_l", _assoc, _unassoc)
unassoc_l = iso_lens("unassoc_l", _unassoc, _assoc)
sym_l = iso_lens("sym_l", _sym, _sym)
skip_right_l = iso_lens("skip_right_l", _skip_right, _skip_right)
skip_left_l = iso_lens("skip_left_l", _skip_left, _skip_left)
