"""Executable laws: extensional equality of lenses up to re-nesting isomorphisms (:func:`check_lens_equal`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._loop import stack
from prelens.core import _args, first, second
from prelens.core._combinators import add_trees, batch_n, branch, vec_lens
from prelens.core._iso import assoc, iso_lens, lunit, runit, skip_right, sym, sym_l, unassoc, unlunit, unrunit
from prelens.core._lens import AnyLens, id_pre_lens
from prelens.core._scan import scan, stack_like, steps_of, unstack
from prelens.core._tree import tree_first_difference
from prelens.faithful._branch import branch_t
from prelens.tambara._meanings import Cost, Shapes, read, shape_of
from prelens.tambara._program import Program
from prelens.tambara._scan import scan_t
from prelens.tambara._trilens import (
    TriLens,
    alpha,
    as_lens_or_trilens,
    beta,
    dimap_m,
    dimap_p,
    dimap_s,
    from_tamb,
    interpret,
    run_program,
    to_tamb,
    tri_compose,
    tri_tensor,
)
from prelens.testing._pure import AliasWarning, check_no_alias, check_pure, law_raised, run_law
from prelens.testing._random import random_affine, random_like
from prelens.testing._vjp import check_vjp

Fn = Callable[[Any], Any]
#: ``equal(lhs, rhs, p, s)``: whether two values of a Trimbara module are the same, seen on ``(p, s)``.
Equal = Callable[[Any, Any, Any, Any], bool]
Rng = np.random.Generator | int | None


def _ident(x: Any) -> Any:
    return x


def check_lens_equal(
    law: str,
    lhs: AnyLens,
    rhs: AnyLens,
    p: Any,
    s: Any,
    *,
    p_iso: Fn = _ident,
    m_iso: Fn = _ident,
    s_iso: Fn = _ident,
    a_iso: Fn = _ident,
    rng: Rng = 0,
    rtol: float = 1e-7,
    atol: float = 1e-10,
) -> None:
    """Check that ``rhs`` behaves as ``lhs`` seen through the given isomorphisms.

    ``rhs`` runs on ``(p_iso(p), s_iso(s))`` and must give residue ``m_iso(m)``
    and output ``a_iso(a)``; on random deltas ``(dm, da)`` (float leaves of the
    shape of ``lhs``'s residue and output) ``rhs.bwd(m_iso(dm), a_iso(da))``
    must give ``(p_iso(dp), s_iso(ds))``. The isos act on deltas too. A side that is a TriLens runs as
    ``from_tamb`` of it, so the category laws check ``tri_compose`` and ``tri_tensor`` as well.

    >>> from prelens import id_pre_lens, runit
    >>> check_lens_equal("right unit", id_pre_lens >> id_pre_lens, id_pre_lens, ((), ()), 1.0,
    ...                  p_iso=runit, m_iso=runit)
    >>> from prelens import PreLens
    >>> double = PreLens(lambda p, s: ((), 2 * s), lambda m, da: ((), 2 * da), name="double")
    >>> check_lens_equal("id is double", id_pre_lens, double, (), 1.0)
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: law 'id is double' fails: forward outputs differ at <root>:
      left:  1.0
      right: 2.0
    """
    gen = _args.seed(law, rng)
    _args.real(law, "rtol", rtol, low=0.0)
    _args.real(law, "atol", atol, low=0.0)
    lhs, rhs = (_pre_lens(law, side, x) for side, x in (("lhs", lhs), ("rhs", rhs)))
    m1, a1 = run_law(law, "left side, forward", lambda: lhs.fwd(p, s))
    m2, a2 = run_law(law, "right side, forward", lambda: rhs.fwd(p_iso(p), s_iso(s)))
    _same(law, "forward outputs", run_law(law, "output iso", lambda: a_iso(a1)), a2, rtol, atol)
    _same(law, "residues", run_law(law, "residue iso", lambda: m_iso(m1)), m2, rtol, atol)
    dm, da = random_like(m1, gen), random_like(a1, gen)
    dp1, ds1 = run_law(law, "left side, backward", lambda: lhs.bwd(dm, da))
    dp2, ds2 = run_law(law, "right side, backward", lambda: rhs.bwd(m_iso(dm), a_iso(da)))
    _same(law, "parameter deltas", run_law(law, "parameter iso", lambda: p_iso(dp1)), dp2, rtol, atol)
    _same(law, "input deltas", run_law(law, "input iso", lambda: s_iso(ds1)), ds2, rtol, atol)


def _pre_lens(law: str, side: str, x: Any) -> AnyLens:
    """A side of a law as a pre-lens: a TriLens (a law about TriLenses) by ``from_tamb``."""
    return from_tamb(x) if isinstance(as_lens_or_trilens(law, side, x), TriLens) else x


def _in_kind_of(law: str, side: str, x: Any, lens: AnyLens) -> Any:
    """``lens`` (a unit or a symmetry of a law about ``x``) as ``x`` is: ``to_tamb(lens)`` beside a TriLens."""
    return to_tamb(lens) if isinstance(as_lens_or_trilens(law, side, x), TriLens) else lens


def _same(law: str, where: str, left: Any, right: Any, rtol: float, atol: float) -> None:
    found = tree_first_difference(left, right, rtol=rtol, atol=atol)
    if found is not None:
        path, x, y = found
        if _alike_but_not_finite(x, y, rtol, atol):  # NaN is close to nothing, not even the same NaN
            raise E.LawError(
                f"law '{law}' cannot be judged: {where} are not finite on both sides at {E.path_str(path)} (NaN or "
                "infinity in the same entries, the rest equal): the random residues and deltas the two sides run on "
                "overflowed; check at smaller parameters and inputs, or a shallower composite"
            )
        raise E.law_violation(law, where, path, x, y)


def _alike_but_not_finite(x: Any, y: Any, rtol: float, atol: float) -> bool:
    try:
        a, b = np.asarray(x), np.asarray(y)
        return (
            a.dtype.kind in "fc"
            and a.shape == b.shape
            and not np.all(np.isfinite(a))
            and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
        )
    except (TypeError, ValueError):  # leaves that are not arrays of numbers
        return False


def _modules_equal(law: str, lhs: Any, rhs: Any, p: Any, s: Any, *, equal: Equal | None = None, **kw: Any) -> None:
    """The two sides of a Trimbara law are equal: by ``equal`` when given, else by :func:`module_equal`."""
    if equal is None and not isinstance(lhs, Program):
        check_lens_equal(law, lhs, rhs, p, s, **kw)
        return
    try:
        same = (equal or module_equal)(lhs, rhs, p, s)
    except Exception as exc:  # a LawError of the comparison, or a crash: this law's failure
        raise law_raised(law, "comparing the two sides", exc) from exc
    if not same:
        raise E.law_violation(law, "the module's values", "<root>", lhs, rhs)


def module_equal(lhs: Any, rhs: Any, p: Any, s: Any) -> bool:
    """Whether two values of a Trimbara module are the same, seen on ``(p, s)``.

    Pre-lenses and :class:`~prelens.tambara.Program` values must run alike (:class:`LawError` names the
    difference); ``Shapes`` and ``Cost`` values must read the same. The Trimbara laws compare with it
    unless given ``equal=`` (a function of the same signature, for a module of your own).

    >>> from prelens.tambara import Program, Shapes
    >>> twice = Shapes().dimap_s(lambda x: np.concatenate([x, x]), lambda d: d[:2])
    >>> module_equal(Shapes(), Shapes(), (), np.ones(2)), module_equal(Shapes(), twice, (), np.ones(2))
    (True, False)
    >>> check_alpha_unit(Program(), (), 1.0)
    """
    if isinstance(lhs, Shapes | Cost):
        r1, r2 = read(lhs, p, s), read(rhs, p, s)
        slots = ("output", "residue", "param_delta", "input_delta")
        return all(shape_of(getattr(r1, k)) == shape_of(getattr(r2, k)) for k in slots) and r1.boxes == r2.boxes
    if isinstance(lhs, Program):
        lhs, rhs = run_program(lhs), run_program(rhs)
    check_lens_equal("module_equal", lhs, rhs, p, s)
    return True


# --------------------------------------------------------------- the category


def check_assoc(f: AnyLens, g: AnyLens, h: AnyLens, pf: Any, pg: Any, ph: Any, s: Any, **kw: Any) -> None:
    """``(f >> g) >> h ≅ f >> (g >> h)`` up to the associator on parameters and residues.

    >>> from prelens import id_pre_lens as i
    >>> check_assoc(i, i, i, (), (), (), 1.0)
    """
    lhs, rhs = (f >> g) >> h, f >> (g >> h)
    check_lens_equal("associativity of >>", lhs, rhs, (ph, (pg, pf)), s, p_iso=unassoc, m_iso=assoc, **kw)


def check_left_unit(f: AnyLens, p: Any, s: Any, **kw: Any) -> None:
    """``id_pre_lens >> f ≅ f`` up to the unitors.

    >>> from prelens import id_pre_lens
    >>> check_left_unit(id_pre_lens, (), 1.0)
    """
    unit = _in_kind_of("left unit of >>", "f", f, id_pre_lens)
    check_lens_equal("left unit of >>", unit >> f, f, (p, ()), s, p_iso=runit, m_iso=lunit, **kw)


def check_right_unit(f: AnyLens, p: Any, s: Any, **kw: Any) -> None:
    """``f >> id_pre_lens ≅ f`` up to the unitors.

    >>> from prelens import id_pre_lens
    >>> check_right_unit(id_pre_lens, (), 1.0)
    """
    unit = _in_kind_of("right unit of >>", "f", f, id_pre_lens)
    check_lens_equal("right unit of >>", f >> unit, f, ((), p), s, p_iso=lunit, m_iso=runit, **kw)


def _middle_four(x: Any) -> Any:
    (a, b), (c, d) = x
    return (a, c), (b, d)


def check_interchange(
    f: AnyLens, g: AnyLens, h: AnyLens, k: AnyLens, pf: Any, pg: Any, ph: Any, pk: Any, s1: Any, s2: Any, **kw: Any
) -> None:
    """``(f @ g) >> (h @ k) ≅ (f >> h) @ (g >> k)`` up to the middle-four interchange: ``@`` is a bifunctor.

    >>> from prelens import id_pre_lens as i
    >>> check_interchange(i, i, i, i, (), (), (), (), 1.0, 2.0)
    """
    lhs, rhs, p = (f @ g) >> (h @ k), (f >> h) @ (g >> k), ((ph, pk), (pf, pg))
    check_lens_equal("interchange of @ and >>", lhs, rhs, p, (s1, s2), p_iso=_middle_four, m_iso=_middle_four, **kw)


def check_tensor_assoc(
    f: AnyLens, g: AnyLens, h: AnyLens, pf: Any, pg: Any, ph: Any, s1: Any, s2: Any, s3: Any, **kw: Any
) -> None:
    """``(f @ g) @ h ≅ f @ (g @ h)`` up to the associator on every slot.

    >>> from prelens import id_pre_lens as i
    >>> check_tensor_assoc(i, i, i, (), (), (), 1.0, 2.0, 3.0)
    """
    isos: dict[str, Any] = {"p_iso": assoc, "m_iso": assoc, "s_iso": assoc, "a_iso": assoc}
    check_lens_equal("associativity of @", (f @ g) @ h, f @ (g @ h), ((pf, pg), ph), ((s1, s2), s3), **isos, **kw)


def check_sym_natural(f: AnyLens, g: AnyLens, pf: Any, pg: Any, s1: Any, s2: Any, **kw: Any) -> None:
    """``(f @ g) >> sym_l ≅ sym_l >> (g @ f)`` up to the symmetry and unitors: the symmetry is natural.

    >>> from prelens import id_pre_lens as i
    >>> check_sym_natural(i, i, (), (), 1.0, 2.0)
    """
    p_iso, m_iso = (lambda q: (sym(q[1]), ())), (lambda m: ((), sym(m[0])))
    sym_ = _in_kind_of("naturality of sym", "f", f, sym_l)
    lhs, rhs = (f @ g) >> sym_, sym_ >> (g @ f)
    check_lens_equal("naturality of sym", lhs, rhs, ((), (pf, pg)), (s1, s2), p_iso=p_iso, m_iso=m_iso, **kw)


# ------------------------------------------------------------- TriProfunctor


def check_dimap_identity(t: Any, p: Any, s: Any, **kw: Any) -> None:
    """``dimap_x(id, id, t) == t`` for ``x`` in ``s``, ``p``, ``m``.

    >>> from prelens import id_pre_lens
    >>> check_dimap_identity(id_pre_lens, (), 1.0)
    """
    for name, dimap in (("s", dimap_s), ("p", dimap_p), ("m", dimap_m)):
        _modules_equal(f"dimap_{name} preserves identity", t, dimap(_ident, _ident, t), p, s, **kw)


def check_dimap_composition(t: Any, p: Any, s: Any, *, rng: Rng = 0, **kw: Any) -> None:
    """Each dimap preserves composition, with the right variance in each slot (random affine maps).

    ``dimap_s(f ∘ f2, g2 ∘ g) == dimap_s(f2, g2) ∘ dimap_s(f, g)`` (likewise ``dimap_p``), and
    ``dimap_m(f2 ∘ f, g ∘ g2) == dimap_m(f2, g2) ∘ dimap_m(f, g)``.

    >>> import numpy as np
    >>> from prelens import id_pre_lens
    >>> check_dimap_composition(id_pre_lens, (), np.ones(2))
    """
    gen = _args.seed("check_dimap_composition", rng)
    f, f2, g, g2 = (random_affine(gen) for _ in range(4))
    for name, dimap in (("s", dimap_s), ("p", dimap_p)):
        lhs, rhs = dimap(lambda x: f(f2(x)), lambda x: g2(g(x)), t), dimap(f2, g2, dimap(f, g, t))
        _modules_equal(f"dimap_{name} preserves composition", lhs, rhs, p, s, rng=gen, **kw)
    lhs, rhs = dimap_m(lambda x: f2(f(x)), lambda x: g(g2(x)), t), dimap_m(f2, g2, dimap_m(f, g, t))
    law = "dimap_m preserves composition (covariant in m, contravariant in dm)"
    _modules_equal(law, lhs, rhs, p, s, rng=gen, **kw)


# ------------------------------------------------------------------- Trimbara


def check_alpha_unit(t: Any, p: Any, s: Any, **kw: Any) -> None:
    """``alpha`` with a unit residue is the identity, up to the left unitor.

    ``dimap_m(lunit, unlunit, dimap_s(unlunit, lunit, alpha(t))) == t``

    >>> from prelens import id_pre_lens
    >>> check_alpha_unit(id_pre_lens, (), 1.0)
    """
    _modules_equal("alpha unit", t, dimap_m(lunit, unlunit, dimap_s(unlunit, lunit, alpha(t))), p, s, **kw)


def check_alpha_composition(t: Any, p: Any, s: Any, n1: Any, n2: Any, **kw: Any) -> None:
    """``alpha ∘ alpha == alpha`` on a paired residue, up to the associator.

    ``dimap_m(unassoc, assoc, dimap_s(assoc, unassoc, alpha(alpha(t)))) == alpha(t)``,
    run on the input ``((n2, n1), s)``.

    >>> from prelens import id_pre_lens
    >>> check_alpha_composition(id_pre_lens, (), 1.0, 2.0, 3.0)
    """
    rhs = dimap_m(unassoc, assoc, dimap_s(assoc, unassoc, alpha(alpha(t))))
    _modules_equal("alpha composition", alpha(t), rhs, p, ((n2, n1), s), **kw)


def check_beta_unit(t: Any, p: Any, s: Any, **kw: Any) -> None:
    """``beta`` with a unit parameter is the identity, up to the unitors.

    ``beta(dimap_s(lunit, unlunit, t)) == dimap_p(runit, unrunit, t)``

    >>> from prelens import id_pre_lens
    >>> check_beta_unit(id_pre_lens, (), 1.0)
    """
    _modules_equal("beta unit", beta(dimap_s(lunit, unlunit, t)), dimap_p(runit, unrunit, t), (p, ()), s, **kw)


def check_beta_composition(t: Any, p: Any, s: Any, **kw: Any) -> None:
    """``beta ∘ beta == beta`` on a paired parameter, up to the associator.

    ``t`` takes inputs ``s = (p2, (p1, s0))``; the law is
    ``beta(beta(t)) == dimap_p(assoc, unassoc, beta(dimap_s(assoc, unassoc, t)))``
    on parameters ``((p, p2), p1)`` and input ``s0``.

    >>> from prelens import id_pre_lens
    >>> check_beta_composition(id_pre_lens, (), (1.0, (2.0, 3.0)))
    """
    p2, (p1, s0) = s
    rhs = dimap_p(assoc, unassoc, beta(dimap_s(assoc, unassoc, t)))
    _modules_equal("beta composition", beta(beta(t)), rhs, ((p, p2), p1), s0, **kw)


def check_naturality(t: Any, p: Any, s: Any, n: Any, *, rng: Rng = 0, **kw: Any) -> None:
    """``alpha`` and ``beta`` are natural: they commute with the dimaps of every slot (random affine ``f``, ``g``).

    ``alpha`` (run on ``p`` and input ``(n, s)``, ``n`` the residue it threads):
    ``alpha(dimap_p(f, g, t)) == dimap_p(f, g, alpha(t))``, and in ``s`` and ``m`` with ``second(f)``,
    ``second(g)`` on the right. When ``s = (p1, s0)``, ``beta`` (run on ``(p, p1)`` and ``s0``):
    ``beta(dimap_p(f, g, t)) == dimap_p(first(f), first(g), beta(t))``,
    ``beta(dimap_s(second(f), second(g), t)) == dimap_s(f, g, beta(t))`` and ``dimap_m`` commutes as it is.

    >>> from prelens import id_pre_lens
    >>> check_naturality(id_pre_lens, (), (1.0, 2.0), 3.0)
    """
    gen = _args.seed("check_naturality", rng)
    f, g = random_affine(gen), random_affine(gen)
    f2, g2 = second(f), second(g)
    squares = [
        ("alpha in p", alpha(dimap_p(f, g, t)), dimap_p(f, g, alpha(t)), p, (n, s)),
        ("alpha in s", alpha(dimap_s(f, g, t)), dimap_s(f2, g2, alpha(t)), p, (n, s)),
        ("alpha in m", alpha(dimap_m(f, g, t)), dimap_m(f2, g2, alpha(t)), p, (n, s)),
    ]
    if isinstance(s, tuple) and len(s) == 2:
        p1, s0 = s
        squares += [
            ("beta in p", beta(dimap_p(f, g, t)), dimap_p(first(f), first(g), beta(t)), (p, p1), s0),
            ("beta in s", beta(dimap_s(f2, g2, t)), dimap_s(f, g, beta(t)), (p, p1), s0),
            ("beta in m", beta(dimap_m(f, g, t)), dimap_m(f, g, beta(t)), (p, p1), s0),
        ]
    for name, lhs, rhs, p_, s_ in squares:
        _modules_equal(f"naturality of {name}", lhs, rhs, p_, s_, rng=gen, **kw)


def check_coherence(t: Any, p: Any, s: Any, n: Any, **kw: Any) -> None:
    """``alpha ∘ beta == beta ∘ dimap_s(skip_right, skip_right) ∘ alpha``.

    ``t`` takes inputs ``s = (p1, s0)``; both sides run on parameters
    ``(p, p1)`` and input ``(n, s0)``.

    >>> from prelens import id_pre_lens
    >>> check_coherence(id_pre_lens, (), (1.0, 2.0), 3.0)
    """
    p1, s0 = s
    lhs, rhs = alpha(beta(t)), beta(dimap_s(skip_right, skip_right, alpha(t)))
    _modules_equal("coherence of alpha and beta", lhs, rhs, (p, p1), (n, s0), **kw)


# ---------------------------------------------------------- TriLens encoding


#: The two ways a TriLens becomes a pre-lens, both checked: the term-algebra module run with loops
#: (``from_tamb``) and the post's own route, the TriLens applied to ``id_pre_lens``.
_ROUTES: tuple[tuple[str, Callable[[Any], AnyLens]], ...] = (
    ("", from_tamb),
    (" (run in PreLens)", lambda tri: interpret(tri, id_pre_lens)),
)


def check_tamb_roundtrip(l: AnyLens, p: Any, s: Any, **kw: Any) -> None:
    """``from_tamb(to_tamb(l)) == l``, parameters and residues exactly as they were.

    >>> from prelens import id_pre_lens
    >>> check_tamb_roundtrip(id_pre_lens, (), 1.0)
    """
    l = _pre_lens("from_tamb . to_tamb = id", "l", l)
    for route, run in _ROUTES:
        check_lens_equal(f"from_tamb . to_tamb = id{route}", l, run(to_tamb(l)), p, s, **kw)


def check_tri_compose(f: AnyLens, g: AnyLens, pf: Any, pg: Any, s: Any, **kw: Any) -> None:
    """``from_tamb(tri_compose(to_tamb(f), to_tamb(g))) == f >> g``.

    >>> from prelens import id_pre_lens as i
    >>> check_tri_compose(i, i, (), (), 1.0)
    """
    f, g = (_pre_lens("tri_compose agrees with >>", side, x) for side, x in (("f", f), ("g", g)))
    for route, run in _ROUTES:
        rhs = run(tri_compose(to_tamb(f), to_tamb(g)))
        check_lens_equal(f"tri_compose agrees with >>{route}", f >> g, rhs, (pg, pf), s, **kw)


def check_tri_tensor(f: AnyLens, g: AnyLens, pf: Any, pg: Any, s1: Any, s2: Any, **kw: Any) -> None:
    """``from_tamb(tri_tensor(to_tamb(f), to_tamb(g))) == f @ g``.

    >>> from prelens import id_pre_lens as i
    >>> check_tri_tensor(i, i, (), (), 1.0, 2.0)
    """
    f, g = (_pre_lens("tri_tensor agrees with @", side, x) for side, x in (("f", f), ("g", g)))
    for route, run in _ROUTES:
        rhs = run(tri_tensor(to_tamb(f), to_tamb(g)))
        check_lens_equal(f"tri_tensor agrees with @{route}", f @ g, rhs, (pf, pg), (s1, s2), **kw)


def check_combinators(l: AnyLens, p: Any, s: Any, n: int = 3, **kw: Any) -> None:
    """The blog's TriLens ``vec_lens``, ``batch_n`` and ``branch_t`` agree with the pre-lens ones.

    >>> from prelens import id_pre_lens
    >>> check_combinators(id_pre_lens, (), 1.0)
    """
    n = _args.count("check_combinators", "n", n)
    l = _pre_lens("check_combinators", "l", l)
    t = to_tamb(l)
    law = "vec_lens on TriLens agrees with vec_lens"
    check_lens_equal(law, vec_lens(n, l), from_tamb(vec_lens(n, t)), [p] * n, [s] * n, **kw)
    law = "batch_n on TriLens agrees with batch_n"
    check_lens_equal(law, batch_n(n, l), from_tamb(batch_n(n, t)), p, [s] * n, **kw)
    check_lens_equal("branch_t agrees with branch", branch(n), from_tamb(branch_t(n)), (), s, **kw)


def check_lens_laws(l: AnyLens, p: Any, s: Any, *, rng: Rng = 0, vjp: bool = True, **kw: Any) -> None:
    """Every single-lens check at once, each its own verdict.

    :func:`check_pure` first; :func:`check_no_alias` (an :class:`AliasWarning`, the rest goes on); the
    units, dimaps, alpha and beta laws, the TriLens round trip, the combinators; with ``vjp=True``
    :func:`check_vjp`. Raises :class:`LawError` on the first failed law. A TriLens is checked as
    ``from_tamb`` of it.

    >>> import numpy as np
    >>> from prelens import id_pre_lens
    >>> check_lens_laws(id_pre_lens, (), np.ones(3))
    """
    gen = _args.seed("check_lens_laws", rng)
    _args.flag("check_lens_laws", "vjp", vjp)
    l = _pre_lens("check_lens_laws", "l", l)  # a TriLens's laws are those of its pre-lens
    check_pure(l, p, s, rng=gen, fn="check_lens_laws")
    try:
        check_no_alias(l, p, s, rng=0)  # its own draws: the laws below see the same ones as before
    except E.LawError as exc:
        warnings.warn(str(exc), AliasWarning, stacklevel=2)
    n, n2 = random_like(s, gen), random_like(s, gen)  # distinct: alpha composition must tell them apart
    check_left_unit(l, p, s, **kw)
    check_right_unit(l, p, s, **kw)
    check_dimap_identity(l, p, s, **kw)
    check_dimap_composition(l, p, s, rng=gen, **kw)
    check_alpha_unit(l, p, s, **kw)
    check_alpha_composition(l, p, s, n, n2, **kw)
    check_beta_unit(l, p, s, **kw)
    check_naturality(l, p, s, n, rng=gen, **kw)
    check_tamb_roundtrip(l, p, s, **kw)
    check_combinators(l, p, s, **kw)
    if vjp:
        check_vjp(l, p, s, rng=gen)


# ------------------------------------------------------------------- scan


def _split_steps(zs: Any, k: int, axis: int) -> tuple[Any, Any]:
    """A sequence cut after its first ``k`` steps, each part stacked as the whole was."""
    if isinstance(zs, list):
        return zs[:k], zs[k:]
    steps = unstack("check_scan", zs, axis)
    return stack(steps[:k], axis), stack(steps[k:], axis)


def _join_steps(a: Any, b: Any, axis: int) -> Any:
    if isinstance(a, list):
        return a + b
    return stack(unstack("check_scan", a, axis) + unstack("check_scan", b, axis), axis)


def _steps(fn: str, xs: Any, axis: int) -> list[Any]:
    steps = steps_of(fn, xs, axis)
    if not steps:
        raise E.must_be(fn, "its sequence xs", "an array or a list of at least one step", E.describe_tree(xs))
    return steps


#: How many steps :func:`check_scan` runs the cons recursion ``scan_t(..., n=...)`` on (a prefix of ``xs``).
CONS_STEPS = 8


def check_scan(cell: AnyLens, p: Any, h0: Any, xs: Any, *, k: int | None = None, axis: int = 0, **kw: Any) -> None:
    """The laws of :func:`~prelens.core.scan` on a cell ``(h, x) -> (h', y)``, run on ``(h0, xs)`` (docs/laws.md).

    One step: ``scan(cell)`` on a one-step sequence is ``cell``. Concatenation: on ``xs ++ ys`` (cut after
    ``k`` steps, the middle by default) it is ``split >> (scan @ id) >> move >> (id @ scan) >> join``, the
    parameter shared. TriLens form: ``from_tamb(scan_t(to_tamb(cell))) == scan(cell)``, and the cons
    recursion ``scan_t(..., n=...)`` on a list of the first (up to 8) steps: it nests with its length.

    >>> import numpy as np
    >>> from prelens import PreLens
    >>> add = PreLens(lambda p, hx: ((), (hx[0] + hx[1],) * 2), lambda m, d: ((), (d[0] + d[1],) * 2), name="add")
    >>> check_scan(add, (), np.zeros(2), np.ones((4, 2)))
    """
    cell = _pre_lens("check_scan", "cell", cell)
    lens = scan(cell, axis=axis)
    steps = _steps("check_scan", xs, axis)
    T = len(steps)

    wrap: Fn = lambda v: (v[0], stack_like([v[1]], xs, axis))
    law = "scan over one step is the cell"
    check_lens_equal(law, cell, lens, p, (h0, steps[0]), s_iso=wrap, a_iso=wrap, m_iso=lambda m: [m], **kw)
    if T >= 2:
        k = T // 2 if k is None else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 < k < T:
            raise E.bad_argument("check_scan", "k", k, f"an int in [1, {T}) (where to cut the {T} steps)")
        split = iso_lens(
            "split",
            lambda s: ((s[0], _split_steps(s[1], k, axis)[0]), _split_steps(s[1], k, axis)[1]),
            lambda d: (d[0][0], _join_steps(d[0][1], d[1], axis)),
        )
        move = iso_lens("move", lambda v: (v[0][1], (v[0][0], v[1])), lambda d: ((d[1][0], d[0]), d[1][1]))
        join = iso_lens(
            "join",
            lambda v: (v[1][0], _join_steps(v[0], v[1][1], axis)),
            lambda d: (_split_steps(d[1], k, axis)[0], (d[0], _split_steps(d[1], k, axis)[1])),
        )
        composed = split >> (lens @ id_pre_lens) >> move >> (id_pre_lens @ lens) >> join
        # parameters ((), (((), p2), ((), ((p1, ()), ())))), residues (((((), (m1, ())), ()), ((), m2)), ())
        shared = composed.dimap_p(
            lambda q: ((), (((), q), ((), ((q, ()), ())))),
            lambda dq: add_trees([dq[1][1][1][0][0], dq[1][0][1]]),
        )
        law = "scan over xs ++ ys is scan over xs, then scan over ys from its state"
        m_iso: Fn = lambda ms: (((((), (ms[:k], ())), ()), ((), ms[k:])), ())
        check_lens_equal(law, lens, shared, p, (h0, xs), m_iso=m_iso, **kw)
    tri = to_tamb(cell)
    check_lens_equal(
        "from_tamb(scan_t(to_tamb(cell))) == scan(cell)", lens, from_tamb(scan_t(tri, axis=axis)), p, (h0, xs), **kw
    )
    n = min(T, CONS_STEPS)  # the cons recursion nests with its length: quadratic work, the stack at ~400
    check_lens_equal(
        "scan_t by the cons recursion agrees with scan",
        scan(cell),
        from_tamb(scan_t(tri, n=n)),
        p,
        (h0, steps[:n]),
        **kw,
    )


def check_scan_map(f: AnyLens, p: Any, h0: Any, xs: Any, *, axis: int = 0, **kw: Any) -> None:
    """A cell that passes its state on unchanged maps its sequence: ``scan(id @ f) ≅ id @ batch_n(T, f)``.

    Up to the list of residues ``[((), m_t)]`` vs ``((), [m_t])`` and the stacking of the steps.

    >>> import numpy as np
    >>> from prelens.nn import linear
    >>> check_scan_map(linear(2, 3), np.ones((2, 3)), np.zeros(1), np.ones((4, 5, 2)), axis=1)
    """
    f = _pre_lens("check_scan_map", "f", f)
    steps = _steps("check_scan_map", xs, axis)
    T = len(steps)
    lhs = id_pre_lens @ batch_n(T, f)
    rhs = scan(id_pre_lens @ f, axis=axis)
    stacked: Fn = lambda v: (v[0], stack_like(v[1], xs, axis))
    law = "scan of a cell that passes its state is batch_n of its output part"
    m_iso: Fn = lambda m: [((), mt) for mt in m[1]]
    check_lens_equal(law, lhs, rhs, ((), p), (h0, steps), s_iso=stacked, a_iso=stacked, m_iso=m_iso, **kw)
