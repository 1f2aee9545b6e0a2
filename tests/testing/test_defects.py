"""Every law checker catches a planted defect: a checker that cannot fail is a defect."""

import numpy as np
import pytest

import prelens.core._lens as lens_mod
import prelens.testing._laws as laws_mod
from prelens import LawError, PreLens, branch, id_pre_lens, iso_lens, sym
from prelens.tambara import _trilens as tamb
from prelens.testing import (
    check_alpha_composition,
    check_alpha_unit,
    check_assoc,
    check_beta_composition,
    check_beta_unit,
    check_coherence,
    check_combinators,
    check_dimap_composition,
    check_dimap_identity,
    check_interchange,
    check_left_unit,
    check_lens_laws,
    check_naturality,
    check_right_unit,
    check_sym_natural,
    check_tamb_roundtrip,
    check_tensor_assoc,
    check_tri_compose,
    check_tri_tensor,
    check_vjp,
)
from prelens.testing._strategies import linear_vec, scale_vec, tanh_vec

V = np.array([0.3, -1.2, 0.7])


def lin():
    l = linear_vec(3, 3)
    return l, l.init(1)


def sc():
    l = scale_vec(3)
    return l, l.init(2)


# --------------------------------------------------------------- check_vjp


def test_vjp_catches_a_wrong_bwd_and_names_the_leaf():
    l, p = lin()
    wrong = PreLens(l.fwd, lambda m, da: (np.outer(da, m[1]), 2 * m[0].T @ da), name="wrong")
    with pytest.raises(LawError, match=r"check_vjp: wrong: .*the first wrong leaf is s"):
        check_vjp(wrong, p, V)


def test_vjp_catches_a_wrong_parameter_gradient():
    l, p = lin()
    wrong = PreLens(l.fwd, lambda m, da: (np.outer(m[1], da), m[0].T @ da), name="transposed")
    with pytest.raises(LawError, match=r"first wrong leaf is p"):
        check_vjp(wrong, p, V)


def concat_branch(n):
    """The original Haskell defect: deltas concatenated instead of summed."""
    return PreLens(lambda p, s: ((), [s] * n), lambda dm, da: ((), np.concatenate(da)), name="concat")


def first_only_branch(n):
    """What concatenation amounts to downstream: only the first delta survives."""
    return PreLens(lambda p, s: ((), [s] * n), lambda dm, da: ((), da[0]), name="first_only")


SUM = PreLens(lambda p, s: ((), sum(s)), lambda dm, da: ((), [da, da]), name="sum2")


@pytest.mark.parametrize("bad", [concat_branch(2), first_only_branch(2)], ids=["concat", "first"])
def test_vjp_catches_a_branch_that_does_not_sum(bad):
    with pytest.raises(LawError):
        check_vjp(bad >> SUM, ((), ()), V)
    check_vjp(branch(2) >> SUM, ((), ()), V)  # the real one passes


def test_combinators_catch_a_branch_that_does_not_sum(monkeypatch):
    monkeypatch.setattr(laws_mod, "branch", first_only_branch)
    l, p = sc()
    with pytest.raises(LawError, match="branch_t agrees with branch"):
        check_combinators(l, p, V)


def test_combinators_catch_a_vec_lens_that_reverses_its_deltas(monkeypatch):
    real = laws_mod.vec_lens

    def reversing(n, l):  # hands the input deltas back to the wrong copies
        out = real(n, l)
        return out.dimap_s(lambda ss: ss, lambda dss: dss[::-1]) if isinstance(out, PreLens) else out

    monkeypatch.setattr(laws_mod, "vec_lens", reversing)
    l, p = sc()
    with pytest.raises(LawError, match="'vec_lens on TriLens agrees with vec_lens' fails: input deltas"):
        check_combinators(l, p, V)


def test_combinators_catch_a_batch_n_that_averages_parameter_deltas(monkeypatch):
    real = laws_mod.batch_n

    def averaging(n, l):  # the shared parameter's deltas must be summed, not averaged
        out = real(n, l)
        return out.dimap_p(lambda q: q, lambda dq: dq / n) if isinstance(out, PreLens) else out

    monkeypatch.setattr(laws_mod, "batch_n", averaging)
    l, p = sc()
    with pytest.raises(LawError, match="'batch_n on TriLens agrees with batch_n' fails: parameter deltas"):
        check_combinators(l, p, V)


# ------------------------------------------------------- swapped parameters


def swapped_rshift(self, other):
    """A `>>` that nests parameters (p_f, p_g), the wrong way round."""
    good = lens_mod.pre_compose(self, other)
    return good.dimap_p(lambda q: (q[1], q[0]), lambda dq: (dq[1], dq[0]))


def test_tri_compose_catches_swapped_parameter_order(monkeypatch):
    monkeypatch.setattr(lens_mod.PreLens, "__rshift__", swapped_rshift)
    (f, pf), g = lin(), linear_vec(3, 3)
    pg = g.init(7)  # distinct from pf: the swap shows in the forward pass, not only in the deltas
    with pytest.raises(LawError, match="'tri_compose agrees with >>' fails: forward outputs differ"):
        check_tri_compose(f, g, pf, pg, V)


def test_assoc_catches_swapped_parameter_order(monkeypatch):
    monkeypatch.setattr(lens_mod.PreLens, "__rshift__", swapped_rshift)
    (f, pf), (g, pg), (h, ph) = sc(), sc(), sc()
    with pytest.raises(LawError, match="associativity of >>"):
        check_assoc(f, g, h, pf, pg, 2 * ph, V)


@pytest.mark.parametrize("check", [check_left_unit, check_right_unit])
def test_units_catch_swapped_parameter_order(monkeypatch, check):
    monkeypatch.setattr(lens_mod.PreLens, "__rshift__", swapped_rshift)
    f, p = sc()
    with pytest.raises(LawError, match="unit of >>"):
        check(f, p, V)


def test_tensor_assoc_catches_a_swapped_residue_in_at(monkeypatch):
    def bad_matmul(self, other):
        return lens_mod.prod_lens(self, other).dimap_m(lambda m: (m[1], m[0]), lambda dm: (dm[1], dm[0]))

    monkeypatch.setattr(lens_mod.PreLens, "__matmul__", bad_matmul)
    (f, pf), (g, pg), (h, ph) = sc(), sc(), lin()
    with pytest.raises(LawError, match="associativity of @"):
        check_tensor_assoc(f, g, h, pf, pg, ph, V, V, V)


def test_interchange_catches_an_impure_lens():
    calls = []

    def fwd(p, s):
        calls.append(1)
        return (), s * len(calls)  # hidden state: the result depends on the call order

    impure = PreLens(fwd, lambda dm, da: ((), da), name="impure")
    with pytest.raises(LawError, match="interchange"):
        check_interchange(impure, impure, impure, impure, (), (), (), (), V, V)


def test_sym_naturality_catches_a_sym_that_forgets_its_delta(monkeypatch):
    monkeypatch.setattr(laws_mod, "sym_l", iso_lens("sym_l", sym, lambda d: d))
    (f, pf), (g, pg) = sc(), lin()
    with pytest.raises(LawError, match="naturality of sym"):
        check_sym_natural(f, tanh_vec >> g, pf, ((), pg)[::-1], V, V)


# --------------------------------------------------------- TriProfunctor


def test_dimap_composition_catches_wrong_variance_in_m(monkeypatch):
    def bad_dimap_m(self, f, g):
        # applies the contravariant map to m and the covariant one to dm
        return lens_mod.PreLens(
            lambda p, s: (lambda m, a: (g(m), a))(*self.fwd(p, s)), lambda dm, da: self.bwd(f(dm), da), "bad"
        )

    monkeypatch.setattr(lens_mod.PreLens, "dimap_m", bad_dimap_m)
    f, p = lin()
    with pytest.raises(LawError, match="dimap_m preserves composition"):
        check_dimap_composition(f, p, V)


def _ident(x):
    return x


def fusing_dimap(slot, *, wrong_order=False, seed=(_ident, _ident)):
    """A ``dimap_<slot>`` that fuses a dimap of a dimap into one pair of maps, as an optimiser
    might. Right: ``dimap_s(f, g, dimap_s(f0, g0, t)) = dimap_s(f0 ∘ f, g ∘ g0, t)`` (likewise
    ``p``; for ``m``, covariant, ``f ∘ f0`` and ``g0 ∘ g``). ``wrong_order`` composes the
    fused maps the other way round; a non-identity ``seed`` pair is applied once per chain."""
    real = getattr(lens_mod.PreLens, f"dimap_{slot}")
    fused = {}  # id(result) -> (base, value map, delta map, result: kept alive so ids stay unique)
    value_first = (slot == "m") != wrong_order  # does the new value map run after the old one?

    def dimap(self, f, g):
        base, f0, g0 = fused[id(self)][:3] if id(self) in fused else (self, *seed)
        if value_first:
            ff, gg = (lambda x: f(f0(x))), (lambda d: g0(g(d)))
        else:
            ff, gg = (lambda x: f0(f(x))), (lambda d: g(g0(d)))
        out = real(base, ff, gg)
        fused[id(out)] = (base, ff, gg, out)
        return out

    return dimap


@pytest.mark.parametrize("slot", ["s", "p", "m"])
def test_dimap_composition_catches_a_fusion_in_the_wrong_order(monkeypatch, slot):
    f, p = lin()
    monkeypatch.setattr(lens_mod.PreLens, f"dimap_{slot}", fusing_dimap(slot))
    check_dimap_identity(f, p, V)  # a correct fusion passes ...
    check_dimap_composition(f, p, V)

    monkeypatch.setattr(lens_mod.PreLens, f"dimap_{slot}", fusing_dimap(slot, wrong_order=True))
    check_dimap_identity(f, p, V)  # ... the wrong order keeps the identity law ...
    with pytest.raises(LawError, match=f"dimap_{slot} preserves composition"):  # ... but not this one
        check_dimap_composition(f, p, V)


def test_dimap_identity_catches_a_dimap_m_that_swaps_the_residue(monkeypatch):
    swap = lambda m: (m[1], m[0])
    # every fused chain of dimap_m stores the residue swapped: functorial, but not the identity
    monkeypatch.setattr(lens_mod.PreLens, "dimap_m", fusing_dimap("m", seed=(swap, swap)))
    f, p = lin()
    check_dimap_composition(f, p, V)  # composition cannot see it ...
    with pytest.raises(LawError, match="dimap_m preserves identity"):
        check_dimap_identity(f, p, V)


def test_dimap_identity_catches_a_dimap_that_changes_the_delta(monkeypatch):
    real = lens_mod.PreLens.dimap_p
    monkeypatch.setattr(lens_mod.PreLens, "dimap_p", lambda self, f, g: real(self, f, lambda d: -g(d)))
    f, p = lin()
    with pytest.raises(LawError, match="dimap_p preserves identity"):
        check_dimap_identity(f, p, V)


# --------------------------------------------------------------- Trimbara


REAL_ALPHA, REAL_BETA = tamb.alpha, tamb.beta


def plant(monkeypatch, name, wrong):
    """Replace the Trimbara map ``name`` ("alpha" or "beta") wherever the checkers and the
    encoding (``to_tamb``, ``PLeft``, ``PRight``) reach it: the module functions, which
    dispatch on the module's type and need not go through ``PreLens.alpha``."""
    for module in (tamb, laws_mod):
        monkeypatch.setattr(module, name, wrong)


def reversed_alpha(self):
    """An alpha that puts the new residue last: (m, m1) instead of (m1, m)."""
    return REAL_ALPHA(self).dimap_m(lambda m: (m[1], m[0]), lambda dm: (dm[1], dm[0]))


def swapped_beta(self):
    """A beta that nests parameters (p1, p) instead of (p, p1)."""
    return REAL_BETA(self).dimap_p(lambda q: (q[1], q[0]), lambda dq: (dq[1], dq[0]))


def test_alpha_unit_catches_a_reversed_alpha(monkeypatch):
    plant(monkeypatch, "alpha", reversed_alpha)
    f, p = lin()
    with pytest.raises(LawError, match="alpha unit"):
        check_alpha_unit(f, p, V)


def test_alpha_composition_catches_a_reversed_alpha(monkeypatch):
    plant(monkeypatch, "alpha", reversed_alpha)
    f, p = lin()
    with pytest.raises(LawError, match="alpha composition"):
        check_alpha_composition(f, p, V, np.ones(2), np.zeros(3))


def test_beta_laws_catch_a_swapped_beta(monkeypatch):
    plant(monkeypatch, "beta", swapped_beta)
    g, pg = sc()
    t = id_pre_lens @ (id_pre_lens @ g)
    s = (np.ones(3), (2 * np.ones(3), V))
    with pytest.raises(LawError, match="beta unit"):
        check_beta_unit(g, pg, V)
    with pytest.raises(LawError, match="beta composition"):
        check_beta_composition(t, ((), ((), pg)), s)


def test_coherence_catches_an_alpha_that_reads_the_wrong_side(monkeypatch):
    def sided_alpha(self):  # takes the extra residue from the right: (s, m1) instead of (m1, s)
        return REAL_ALPHA(self).dimap_s(sym, sym)

    plant(monkeypatch, "alpha", sided_alpha)
    g, pg = sc()
    with pytest.raises(LawError, match="coherence"):
        check_coherence(id_pre_lens @ g, ((), pg), (np.ones(3), V), np.zeros(2))


def test_naturality_catches_an_alpha_that_touches_the_input(monkeypatch):
    def doubling_alpha(self):
        return REAL_ALPHA(self).dimap_s(lambda ns: (ns[0], 2 * ns[1]), lambda d: (d[0], 2 * d[1]))

    plant(monkeypatch, "alpha", doubling_alpha)
    f, p = lin()
    with pytest.raises(LawError, match="naturality of alpha in s"):
        check_naturality(f, p, V, np.ones(2))


def seeing_through(monkeypatch, structure_map, slot):
    """Plant an ``alpha`` (or ``beta``) that sees through ``dimap_<slot>``: applied to
    ``dimap_<slot>(f, g, t)`` it returns ``alpha(t)``, dropping the map (an over-eager
    simplification). Only the naturality square of that map in that slot can see it."""
    real_dimap = getattr(laws_mod, f"dimap_{slot}")
    real = {"alpha": REAL_ALPHA, "beta": REAL_BETA}[structure_map]
    made = {}  # id(result) -> (t, result: kept alive so ids stay unique)

    def dimap(f, g, t):
        out = real_dimap(f, g, t)
        made[id(out)] = (t, out)
        return out

    monkeypatch.setattr(laws_mod, f"dimap_{slot}", dimap)
    plant(monkeypatch, structure_map, lambda t: real(made[id(t)][0] if id(t) in made else t))


@pytest.mark.parametrize("structure_map", ["alpha", "beta"])
@pytest.mark.parametrize("slot", ["p", "s", "m"])
def test_naturality_catches_a_structure_map_that_sees_through_a_dimap(monkeypatch, structure_map, slot):
    (f, pf), (g, pg) = sc(), lin()
    t, p, s = f @ g, (pf, pg), (np.ones(3), V)  # beta's squares need an input (p1, s0)
    check_naturality(t, p, s, np.zeros(2))  # the real maps pass
    seeing_through(monkeypatch, structure_map, slot)
    with pytest.raises(LawError, match=f"naturality of {structure_map} in {slot}"):
        check_naturality(t, p, s, np.zeros(2))


# --------------------------------------------------------- TriLens encoding


def test_roundtrip_catches_a_reversed_alpha(monkeypatch):
    plant(monkeypatch, "alpha", reversed_alpha)
    f, p = lin()
    with pytest.raises(LawError, match=r"from_tamb \. to_tamb = id"):
        check_tamb_roundtrip(f, p, V)


def test_roundtrip_catches_a_dimap_m_that_forgets_to_map_the_residue(monkeypatch):
    def lazy_dimap_m(self, f, g):  # maps the residue's delta on the way back, but stores m as it was
        return lens_mod.PreLens(self.fwd, lambda dm, da: self.bwd(g(dm), da), f"lazy({self.name})")

    monkeypatch.setattr(lens_mod.PreLens, "dimap_m", lazy_dimap_m)
    f, p = lin()  # from_tamb keeps the residue (m, ()) where f has m: only the residues show it
    with pytest.raises(LawError, match=r"'from_tamb \. to_tamb = id \(run in PreLens\)' fails: residues differ"):
        check_tamb_roundtrip(f, p, V)


def test_tri_tensor_catches_a_broken_pleft(monkeypatch):
    monkeypatch.setattr(
        tamb.PLeft, "beta", lambda self: tamb.PLeft(tamb.beta(tamb.dimap_s(tamb.unassoc, tamb.assoc, self.t)))
    )
    (f, pf), (g, pg) = sc(), lin()
    with pytest.raises(LawError, match="tri_tensor agrees with @"):
        check_tri_tensor(f, g, pf, pg, V, V)


# ------------------------------------------------------------ check_lens_laws


def test_lens_laws_run_check_vjp():
    l, p = lin()
    wrong = PreLens(l.fwd, lambda m, da: (np.outer(m[1], da), m[0].T @ da), name="transposed", init_fn=l.init_fn)
    check_lens_laws(wrong, p, V, vjp=False)  # every other law holds for a wrong derivative
    with pytest.raises(LawError, match="check_vjp: transposed"):
        check_lens_laws(wrong, p, V)


def test_lens_laws_run_check_combinators(monkeypatch):
    monkeypatch.setattr(laws_mod, "branch", first_only_branch)
    l, p = sc()
    with pytest.raises(LawError, match="branch_t agrees with branch"):
        check_lens_laws(l, p, V)


def test_lens_laws_run_check_alpha_composition(monkeypatch):
    alphas = {}  # id(result) -> (t, result: kept alive so ids stay unique)
    swap = lambda m: (m[1][0], (m[0], m[1][1]))  # (n2, (n1, m)) -> (n1, (n2, m))

    def nesting_alpha(t):  # alpha of an alpha stores the two threaded residues the wrong way round
        out = REAL_ALPHA(t)
        if id(t) in alphas:
            out = out.dimap_m(swap, swap)
        alphas[id(out)] = (t, out)
        return out

    plant(monkeypatch, "alpha", nesting_alpha)
    l, p = lin()
    with pytest.raises(LawError, match="alpha composition"):
        check_lens_laws(l, p, V)
