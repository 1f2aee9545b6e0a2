"""Hypothesis strategies: random differentiable pre-lenses with matching data.

A *value type* is an ``int`` (a float64 vector of that length) or a pair of
value types. :func:`lenses` grows a random lens from a pool of primitives
(linear map, bias, elementwise scale, tanh, identity, copy, add, sym) joined by
random ``>>`` and ``@``; every generated lens knows its input and output types
and can make its parameters, so a test can draw data for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from hypothesis import strategies as st

from .._combinators import add_l, copy_l
from .._iso import sym_l
from .._lens import AnyLens, PreLens, id_pre_lens, parameter_free

ValueType = Union[int, tuple["ValueType", "ValueType"]]  # noqa: UP007 (a recursive alias needs Union)


@dataclass(frozen=True)
class GeneratedLens:
    """A generated lens with its input and output value types."""

    lens: AnyLens
    in_type: ValueType
    out_type: ValueType

    def sample(self, rng: np.random.Generator | int | None = 0) -> tuple[Any, Any]:
        """Parameters (from ``lens.init``) and an input, drawn with ``rng``."""
        gen = np.random.default_rng(rng)
        return self.lens.init(gen), random_value(self.in_type, gen)


def random_value(t: ValueType, rng: np.random.Generator) -> Any:
    """A random value of type ``t``: standard-normal float64 vectors in nested pairs.

    >>> random_value((2, 1), np.random.default_rng(0))[1].shape
    (1,)
    """
    if isinstance(t, int):
        return rng.standard_normal(t)
    return random_value(t[0], rng), random_value(t[1], rng)


# --------------------------------------------------------------- primitives


def linear_vec(n: int, k: int) -> AnyLens:
    """``W s`` with ``W`` of shape ``(k, n)``; residue ``(W, s)``."""

    def fwd(w: np.ndarray, s: np.ndarray) -> tuple[Any, np.ndarray]:
        return (w, s), w @ s

    def bwd(m: tuple[np.ndarray, np.ndarray], da: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w, s = m
        return np.outer(da, s), w.T @ da

    return PreLens(fwd, bwd, f"linear_vec({n}→{k})", lambda rng: rng.standard_normal((k, n)) / np.sqrt(n))


def bias_vec(n: int) -> AnyLens:
    """``s + b``; no residue."""
    return PreLens(
        lambda b, s: ((), s + b),
        lambda dm, da: (da, da),
        f"bias_vec({n})",
        lambda rng: rng.standard_normal(n),
    )


def scale_vec(n: int) -> AnyLens:
    """``c ⊙ s`` elementwise; residue ``(c, s)``."""
    return PreLens(
        lambda c, s: ((c, s), c * s),
        lambda m, da: (da * m[1], da * m[0]),
        f"scale_vec({n})",
        lambda rng: rng.standard_normal(n),
    )


#: ``tanh`` elementwise; residue the output.
tanh_vec: AnyLens = parameter_free("tanh_vec", lambda s: (np.tanh(s), np.tanh(s)), lambda a, da: da * (1 - a * a))


@st.composite
def value_types(draw: st.DrawFn, max_depth: int = 1, max_dim: int = 3) -> ValueType:
    """Random value types: vector lengths, nested in pairs up to ``max_depth``."""
    if max_depth <= 0 or draw(st.booleans()):
        return draw(st.integers(1, max_dim))
    return draw(value_types(max_depth - 1, max_dim)), draw(value_types(max_depth - 1, max_dim))


@st.composite
def lenses(draw: st.DrawFn, in_type: ValueType | None = None, max_depth: int = 2, max_dim: int = 3) -> GeneratedLens:
    """A random differentiable pre-lens from ``in_type`` (drawn if not given)."""
    if in_type is None:
        in_type = draw(value_types(1, max_dim))
    options = ["prim"]
    if max_depth > 0:
        options += ["seq", "copy"]
        if isinstance(in_type, tuple):
            options += ["par"]
    choice = draw(st.sampled_from(options))
    if choice == "seq":
        f = draw(lenses(in_type, max_depth - 1, max_dim))
        g = draw(lenses(f.out_type, max_depth - 1, max_dim))
        return GeneratedLens(f.lens >> g.lens, in_type, g.out_type)
    if choice == "par":
        assert isinstance(in_type, tuple)
        f = draw(lenses(in_type[0], max_depth - 1, max_dim))
        g = draw(lenses(in_type[1], max_depth - 1, max_dim))
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
    kinds = ["sym", "id"] + (["add"] if left == right else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "sym":
        return GeneratedLens(sym_l, in_type, (right, left))
    if kind == "add":
        return GeneratedLens(add_l, in_type, left)
    return GeneratedLens(id_pre_lens, in_type, in_type)


@st.composite
def chains(draw: st.DrawFn, n: int, in_type: ValueType | None = None, max_depth: int = 1) -> list[GeneratedLens]:
    """``n`` generated lenses where each one's output type is the next one's input type."""
    out: list[GeneratedLens] = []
    t = in_type if in_type is not None else draw(value_types(1))
    for _ in range(n):
        gl = draw(lenses(t, max_depth))
        out.append(gl)
        t = gl.out_type
    return out


def seeds() -> st.SearchStrategy[int]:
    """Seeds for ``numpy.random.default_rng``."""
    return st.integers(0, 2**32 - 1)
