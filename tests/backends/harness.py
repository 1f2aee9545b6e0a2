"""One lens run on numpy and on another array library from the same values, compared leaf by leaf.

A *case* is a lens with a parameter, an input and an output delta, all numpy.
:func:`check_case` moves them to the library under test with
:func:`prelens.backend.to_backend`, runs ``fwd`` and ``bwd`` there and on numpy, and
asserts that

* every array the lens returns (output, residue, ``dp``, ``ds``) belongs to the
  library under test (nothing fell back to numpy),
* the results equal numpy's to ``1e-12`` relative in float64 (``1e-5`` in float32),
* the numpy arguments were not written into.

The cases live in ``cases_*.py`` beside this file, one file per area of the
library; ``tests/backends/test_strict.py`` runs them all on
``array_api_strict``, and ``tests_peers/test_backends.py`` on PyTorch and JAX.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import prelens
from prelens.backend import _arrays as B

Tree = Any


@dataclass(frozen=True)
class Case:
    """A lens and numpy values to run it on; ``make`` builds ``(lens, p, s, da)`` from a seed."""

    name: str
    make: Callable[[np.random.Generator], tuple[Any, Tree, Tree, Tree]]
    #: Leaves of the input that are data (integer tokens): compared, never differentiated.
    tags: tuple[str, ...] = field(default=())


def all_cases() -> list[Case]:
    """Every case of every ``cases_*`` module in this package."""
    import tests.backends as pkg

    found: list[Case] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            found.extend(importlib.import_module(f"tests.backends.{info.name}").CASES)
    return found


def _leaves(tree: Tree, numbers: bool = True) -> list[Any]:
    """The array leaves of a tree; with ``numbers``, a number (what a numpy loss returns, or a
    Python float that ``jax.jit`` hands back as a 0-d array) counts as a 0-d array."""
    out: list[Any] = []

    def visit(t: Any) -> None:
        if numbers and (isinstance(t, np.generic) or type(t) in (int, float)):
            out.append(np.asarray(t))
        elif B.is_array(t):
            out.append(t)
        elif isinstance(t, (tuple, list)):
            for c in t:
                visit(c)
        elif isinstance(t, dict):
            for c in t.values():
                visit(c)

    visit(tree)
    return out


def assert_in_library(tree: Tree, lib: str, what: str) -> None:
    for leaf in _leaves(tree, numbers=False):
        got = B.namespace_name(B.namespace(leaf))
        assert got == lib, f"{what}: an array of {got} ({B.dtype_name(leaf.dtype)}{tuple(leaf.shape)}), not {lib}"


def assert_close(ref: Tree, got: Tree, what: str) -> None:
    ref_leaves, got_leaves = _leaves(ref), _leaves(got)
    assert len(ref_leaves) == len(got_leaves), f"{what}: {len(got_leaves)} arrays, numpy gave {len(ref_leaves)}"
    for i, (r, g) in enumerate(zip(ref_leaves, got_leaves)):
        g = B.to_numpy(g)
        if r.ndim == 0 and r.dtype.kind == g.dtype.kind:  # a number: its width is the library's choice
            r = r.astype(g.dtype)
        assert g.shape == r.shape and g.dtype == r.dtype, f"{what} leaf {i}: {g.dtype}{g.shape} vs {r.dtype}{r.shape}"
        tol = 1e-12 if r.dtype == np.float64 else 1e-5
        if r.dtype.kind == "f":
            scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
            err = float(np.max(np.abs(g - r), initial=0.0)) / scale
            assert err <= tol, f"{what} leaf {i}: differs from numpy by {err:.2e} (relative), tolerance {tol:g}"
        else:
            np.testing.assert_array_equal(g, r, err_msg=f"{what} leaf {i}")


def check_case(case: Case, backend: str, seed: int = 0) -> None:
    """Run ``case`` on numpy and on ``backend``; assert they agree and stay in their libraries."""
    lens, p, s, da = case.make(np.random.default_rng(seed))
    before = [leaf.copy() for leaf in _leaves((p, s, da))]
    m_ref, a_ref = lens.fwd(p, s)
    dp_ref, ds_ref = lens.bwd(m_ref, da)
    for b, a in zip(before, _leaves((p, s, da))):
        np.testing.assert_array_equal(a, b, err_msg=f"{case.name}: the numpy arguments were written into")

    px, sx, dax = prelens.backend.to_backend((p, s, da), backend)
    m, a = lens.fwd(px, sx)
    dp, ds = lens.bwd(m, dax)
    lib = B.namespace_name(B.resolve_backend("test", backend))
    for what, tree in (("output", a), ("residue", m), ("dp", dp), ("ds", ds)):
        assert_in_library(tree, lib, f"{case.name} on {lib}: {what}")
    assert_close(a_ref, a, f"{case.name} on {lib}: output")
    assert_close(dp_ref, dp, f"{case.name} on {lib}: dp")
    assert_close(ds_ref, ds, f"{case.name} on {lib}: ds")
