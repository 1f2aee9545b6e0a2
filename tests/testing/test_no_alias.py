"""Aliasing, a verdict of its own: a correct lens that keeps references passes ``check_vjp`` and
``check_pure``, fails ``check_no_alias``, and ``check_lens_laws`` warns; no lens of the library aliases."""

import numpy as np
import pytest

import prelens
from prelens import LawError, PreLens, TriLens, alpha, id_pre_lens
from prelens.testing import AliasWarning, check_lens_laws, check_no_alias, check_pure, check_vjp

from ..fuzz.test_fuzz_coverage import _makes_lenses
from ..fuzz.test_fuzz_lenses import CASES

W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
S = np.array([0.3, -0.2, 1.1])

#: The way the post writes a lens: the residue keeps the caller's W and s themselves.
POST = PreLens(
    lambda W, s: ((W, s), W @ s),
    lambda m, da: (np.outer(da, m[1]), m[0].T @ da),
    name="post",
    init_fn=lambda rng: rng.standard_normal((2, 3)),
)


def test_a_correct_lens_that_keeps_references_passes_the_derivative_and_purity_checks():
    check_vjp(POST, W, S)
    check_pure(POST, W, S)


def test_its_aliasing_is_named_by_check_no_alias():
    with pytest.raises(
        LawError, match=r"^check_no_alias: post: the residue at m\[0\] aliases the caller's parameters p "
    ):
        check_no_alias(POST, W, S)
    only_s = PreLens(lambda W, s: ((W.copy(), s), W @ s), POST.bwd, name="s")
    with pytest.raises(
        LawError, match=r"the residue at m\[1\] aliases the caller's input s at path s: .* changed bwd's dp"
    ):
        check_no_alias(only_s, W, S)
    check_no_alias(PreLens(lambda W, s: ((W.copy(), s.copy()), W @ s), POST.bwd), W, S)


def test_check_lens_laws_reports_aliasing_as_a_warning_and_runs_every_law():
    with pytest.warns(AliasWarning, match="the residue at m\\[0\\] aliases"):
        check_lens_laws(POST, W, S)
    wrong = PreLens(POST.fwd, lambda m, da: (np.outer(da, m[1]), 2 * m[0].T @ da), name="wrong")
    with pytest.warns(AliasWarning), pytest.raises(LawError, match="check_vjp: wrong: bwd is not the reverse"):
        check_lens_laws(wrong, W, S)


def test_alpha_keeps_its_own_copy_of_the_threaded_residue():
    """``alpha``'s bwd hands the threaded ``n`` back as its delta: it keeps a copy, not the caller's array."""
    check_no_alias(alpha(id_pre_lens), (), (np.ones(2), S))


def _public_lenses():
    return {
        f"{m.__name__}.{n}": getattr(m, n)
        for m in (prelens.core, prelens.nn)
        for n in m.__all__
        if isinstance(getattr(m, n), PreLens | TriLens) or _makes_lenses(getattr(m, n))
    }


def test_every_public_lens_of_core_and_nn_has_a_case_below():
    covered = {id(o) for c in CASES for o in c.covers}
    assert [n for n, o in _public_lenses().items() if id(o) not in covered] == []


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_no_library_lens_aliases_its_callers_arrays(case):
    lens = case.build()
    p, s = case.good(lens, np.random.default_rng(0), 3)
    if isinstance(lens, TriLens):
        lens = prelens.from_tamb(lens)
    check_no_alias(lens, p, s)
