"""Hypothesis strategies: random differentiable pre-lenses with matching data.

A *value type* is an ``int`` (a float64 vector of that length) or a pair of value types. :func:`lenses`
joins primitives (linear map, bias, scale, tanh, identity, copy, add, sym) by random ``>>`` and ``@``;
a :class:`GeneratedLens` knows its types and draws its data (:meth:`~GeneratedLens.sample`,
:meth:`~GeneratedLens.deltas`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from hypothesis import strategies as st

from prelens import errors as E
from prelens.core import _args
from prelens.core._combinators import add_l, copy_l
from prelens.core._iso import sym_l
from prelens.core._lens import AnyLens, PreLens, id_pre_lens, parameter_free
from prelens.testing._random import random_like

ValueType = Union[int, tuple["ValueType", "ValueType"]]  # noqa: UP007 (a recursive alias needs Union)


@dataclass(frozen=True)
class GeneratedLens:
    """A generated lens with its input and output value types; wrap a lens of your own to draw its data.

    >>> from prelens.nn import linear
    >>> gl = GeneratedLens(linear(3, 2), 3, 2)
    >>> p, s = gl.sample(0)
    >>> p.shape, s.shape, gl.lens.fwd(p, s)[1].shape
    ((3, 2), (3,), (2,))
    """

    lens: AnyLens
    in_type: ValueType
    out_type: ValueType

    def sample(self, rng: np.random.Generator | int | None = 0) -> tuple[Any, Any]:
        """Parameters (from ``lens.init``) and an input, drawn with ``rng``."""
        gen = _args.seed("GeneratedLens.sample", rng)
        return self.lens.init(gen), _random_value(self.in_type, gen)

    def deltas(self, p: Any, s: Any, rng: np.random.Generator | int | None = 0) -> tuple[Any, Any]:
        """Random deltas ``(dm, da)`` shaped like the residue and output of ``lens.fwd(p, s)`` (other leaves kept).

        >>> gl = GeneratedLens(scale_vec(2), 2, 2)
        >>> [x.shape for x in gl.lens.bwd(*gl.deltas(*gl.sample(0), 1))]
        [(2,), (2,)]
        """
        gen = _args.seed("GeneratedLens.deltas", rng)
        m, a = self.lens.fwd(p, s)
        return random_like(m, gen), random_like(a, gen)


def random_value(t: ValueType, rng: np.random.Generator | int | None) -> Any:
    """A random value of type ``t``: standard-normal float64 vectors in nested pairs.

    >>> random_value((2, 1), np.random.default_rng(0))[1].shape
    (1,)
    """
    return _random_value(value_type("random_value", "t", t), _args.seed("random_value", rng))


def _random_value(t: ValueType, rng: np.random.Generator) -> Any:
    if isinstance(t, int):
        return rng.standard_normal(t)
    return _random_value(t[0], rng), _random_value(t[1], rng)


def value_type(fn: str, what: str, t: Any) -> ValueType:
    """``t`` if it is a value type (an int >= 0, numpy's too, or a pair of value types), its ints Python's; else an
    error naming ``fn``."""

    def checked(x: Any) -> ValueType:
        if isinstance(x, tuple) and len(x) == 2:
            return checked(x[0]), checked(x[1])
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) and x >= 0:
            return int(x)
        expected = "a value type: an int (a vector's length) or a pair of value types such as (3, (2, 2))"
        raise E.bad_argument(fn, what, t, expected)

    return checked(t)


# ------------------------------------------------ the generator's primitives (no longer public)


def linear_vec(n: int, k: int) -> AnyLens:
    """``W s`` with ``W`` of shape ``(k, n)``; residue ``(W, s)``, copies.

    >>> l = linear_vec(3, 2)
    >>> l, l.init(0).shape, l.fwd(np.ones((2, 3)), np.arange(3.0))[1]
    (linear_vec(3→2), (2, 3), array([3., 3.]))
    """
    return PreLens(
        lambda w, s: ((w.copy(), s.copy()), w @ s),
        lambda m, da: (np.outer(da, m[1]), m[0].T @ da),
        f"linear_vec({n}→{k})",
        lambda rng: rng.standard_normal((k, n)) / np.sqrt(n),
    )


def bias_vec(n: int) -> AnyLens:
    """``s + b``; no residue."""
    return PreLens(
        lambda b, s: ((), s + b), lambda dm, da: (da, da), f"bias_vec({n})", lambda rng: rng.standard_normal(n)
    )


def scale_vec(n: int) -> AnyLens:
    """``c ⊙ s`` elementwise; residue ``(c, s)``, copies."""
    return PreLens(
        lambda c, s: ((c.copy(), s.copy()), c * s),
        lambda m, da: (da * m[1], da * m[0]),
        f"scale_vec({n})",
        lambda rng: rng.standard_normal(n),
    )


#: ``tanh`` elementwise; residue the output.
tanh_vec: AnyLens = parameter_free("tanh_vec", lambda s: (np.tanh(s), np.tanh(s)), lambda a, da: da * (1 - a * a))


@st.composite
def value_types(draw: st.DrawFn, max_depth: int = 1, max_dim: int = 3) -> ValueType:
    """Random value types: vector lengths, nested in pairs up to ``max_depth``.

    >>> from hypothesis import find, settings
    >>> find(value_types(), lambda t: isinstance(t, tuple), settings=settings(database=None, derandomize=True))
    (1, 1)
    """
    if max_depth <= 0 or draw(st.booleans()):
        return draw(st.integers(1, max_dim))
    return draw(value_types(max_depth - 1, max_dim)), draw(value_types(max_depth - 1, max_dim))


def lenses(in_type: ValueType | None = None, max_depth: int = 2, max_dim: int = 3) -> st.SearchStrategy[GeneratedLens]:
    """A random differentiable pre-lens from ``in_type`` (drawn if not given).

    >>> from hypothesis import find, settings
    >>> find(lenses((1, 1)), lambda g: g.out_type == 1, settings=settings(database=None, derandomize=True))
    GeneratedLens(lens=add_l, in_type=(1, 1), out_type=1)
    """
    t = None if in_type is None else value_type("lenses", "in_type", in_type)
    return _lenses(t, _args.count("lenses", "max_depth", max_depth, least=0), _args.count("lenses", "max_dim", max_dim))


@st.composite
def _lenses(draw: st.DrawFn, in_type: ValueType | None, max_depth: int, max_dim: int) -> GeneratedLens:
    if in_type is None:
        in_type = draw(value_types(1, max_dim))
    options = ["prim"]
    if max_depth > 0:
        options += ["seq", "copy"]
        if isinstance(in_type, tuple):
            options += ["par"]
    choice = draw(st.sampled_from(options))
    if choice == "seq":
        f = draw(_lenses(in_type, max_depth - 1, max_dim))
        g = draw(_lenses(f.out_type, max_depth - 1, max_dim))
        return GeneratedLens(f.lens >> g.lens, in_type, g.out_type)
    if choice == "par":
        assert isinstance(in_type, tuple)
        f = draw(_lenses(in_type[0], max_depth - 1, max_dim))
        g = draw(_lenses(in_type[1], max_depth - 1, max_dim))
        return GeneratedLens(f.lens @ g.lens, in_type, (f.out_type, g.out_type))
    if choice == "copy":
        return GeneratedLens(copy_l, in_type, (in_type, in_type))
    return draw(_primitive(in_type, max_dim))


@st.composite
def _primitive(draw: st.DrawFn, in_type: ValueType, max_dim: int) -> GeneratedLens:
    if isinstance(in_type, int):
        n = in_type
        kind = draw(st.sampled_from(["linear", "bias", "scale", "tanh", "id"]))
        if kind == "linear":
            k = draw(st.integers(1, max_dim))
            return GeneratedLens(linear_vec(n, k), n, k)
        lens = {"bias": bias_vec(n), "scale": scale_vec(n), "tanh": tanh_vec, "id": id_pre_lens}[kind]
        return GeneratedLens(lens, n, n)
    left, right = in_type
    pairs = {"sym": GeneratedLens(sym_l, in_type, (right, left)), "id": GeneratedLens(id_pre_lens, in_type, in_type)}
    if left == right:
        pairs["add"] = GeneratedLens(add_l, in_type, left)
    return pairs[draw(st.sampled_from(list(pairs)))]


def chains(
    n: int, in_type: ValueType | None = None, max_depth: int = 1, max_dim: int = 3
) -> st.SearchStrategy[list[GeneratedLens]]:
    """``n`` generated lenses where each one's output type is the next one's input type (vectors up to ``max_dim``).

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None, derandomize=True)
    >>> [(g.lens, g.in_type, g.out_type) for g in find(chains(2, 1, 0), lambda c: c[-1].out_type == 2, settings=quiet)]
    [(linear_vec(1→2), 1, 2), (bias_vec(2), 2, 2)]
    """
    t = None if in_type is None else value_type("chains", "in_type", in_type)
    n, max_depth = (_args.count("chains", what, x, least=0) for what, x in (("n", n), ("max_depth", max_depth)))
    return _chains(n, t, max_depth, _args.count("chains", "max_dim", max_dim))


@st.composite
def _chains(draw: st.DrawFn, n: int, in_type: ValueType | None, max_depth: int, max_dim: int) -> list[GeneratedLens]:
    out: list[GeneratedLens] = []
    t = in_type if in_type is not None else draw(value_types(1, max_dim))
    for _ in range(n):
        gl = draw(_lenses(t, max_depth, max_dim))
        out.append(gl)
        t = gl.out_type
    return out


def seeds() -> st.SearchStrategy[int]:
    """Seeds for ``numpy.random.default_rng``: integers in ``[0, 2³²)``.

    >>> seeds()
    integers(min_value=0, max_value=4_294_967_295)
    """
    return st.integers(0, 2**32 - 1)
