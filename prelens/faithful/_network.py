"""Milewski's neural network, faithfully: neuron, layer and MLP as pre-lenses and TriLenses (docs/faithful.md).

``D = Double`` is a Python float; ``V = [D]`` a 1-D float64 array (a list of floats too on the way in).
Each ``_t`` is built from the ``_l`` pieces with ``to_tamb`` and ``tri_compose``, as the post builds
``neuronT``; a layer fans out with :func:`~prelens.faithful.branch_t`, whose backward pass sums.

>>> bias_l.fwd(0.5, 2.0), bias_l.bwd((), 3.0)
(((), 2.5), (3.0, 3.0))
>>> m, a = activ_l.fwd((), 1.0)
>>> m, round(a, 6), round(activ_l.bwd(m, 1.0)[1], 6)
(1.0, 0.761594, 0.419974)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.backend._arrays import is_real
from prelens.core import _args
from prelens.core._combinators import branch, chain, vec_lens
from prelens.core._iso import first, lunit, runit, second, unlunit, unrunit
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.faithful._branch import branch_t
from prelens.io._checkpoint import register_namedtuple
from prelens.nn._fastcheck import real_vector
from prelens.tambara._meanings import Rule, placeholder, register_rule
from prelens.tambara._trilens import AnyTriLens, TriLens, dimap_m, dimap_p, to_tamb, tri_compose

D = float
Vec = npt.NDArray[np.float64]
VecLike = Vec | Sequence[float]


@register_namedtuple
class Para(NamedTuple):
    """A neuron's parameters (Haskell: ``data Para = Para { bias :: D, weight :: V }``), a named tuple of
    ``bias`` (a float) and ``weight`` (a 1-D float64 array) that the tree toolkit handles.

    >>> from prelens.core import tree_add
    >>> tree_add(Para(0.5, np.array([1.0, 2.0])), Para(0.25, np.array([1.0, 1.0])))
    Para(bias=0.75, weight=array([2., 3.]))
    """

    bias: float
    weight: Vec


def mk_para(bw: tuple[float, VecLike]) -> Para:
    """Pack ``(bias, weight)`` into a :class:`Para`.

    Haskell::

        mkPara :: (D, V) -> Para
        mkPara (b, v) = Para b v

    >>> mk_para((0.1, [1.0, -1.0]))
    Para(bias=0.1, weight=array([ 1., -1.]))
    """
    if not (isinstance(bw, (tuple, list)) and len(bw) == 2):
        raise E.must_be("mk_para", "its argument", "a pair (bias, weight)", E.describe_tree(bw))
    b, w = bw
    if not is_real(b):
        raise E.must_be("mk_para", "bias", "a real number", E.describe(b))
    return Para(float(b), real_vector("mk_para", "weight", w))


def un_para(p: Para) -> tuple[float, Vec]:
    """Unpack a :class:`Para` into ``(bias, weight)``.

    Haskell::

        unPara :: Para -> (D, V)
        unPara p = (bias p, weight p)

    >>> un_para(Para(0.1, np.array([1.0, -1.0])))
    (0.1, array([ 1., -1.]))
    """
    if not isinstance(p, Para):
        raise E.must_be("neuron", "parameters", "Para(bias, weight)", E.describe(p))
    return p.bias, p.weight


def init_para(m_in: int, rng: np.random.Generator) -> Para:
    """Random parameters of a neuron with ``m_in`` inputs: LeCun normal, ``weight ~ N(0, 1/m_in)``, ``bias = 0``.

    Haskell (the post draws from a stream of numbers; this from a generator)::

        initPara :: Int -> [D] -> (Para, [D])

    >>> init_para(2, np.random.default_rng(0)).weight.shape
    (2,)
    """
    _args.count("init_para", "m_in", m_in)
    rng = _args.seed("init_para", rng)
    return Para(0.0, rng.standard_normal(m_in) / np.sqrt(m_in))


def init_mlp(m_in: int, sizes: Sequence[int], rng: np.random.Generator) -> list[list[Para]]:
    """Random parameters for ``make_mlp(m_in, sizes)``: one list of :class:`Para` per layer.

    Haskell::

        initParaMlp :: Int -> [Int] -> [D] -> ([[Para]], [D])

    Layers first to last, neurons in order, each drawn with :func:`init_para` from ``rng``.

    >>> ps = init_mlp(3, [4, 1], np.random.default_rng(0))
    >>> [len(layer) for layer in ps], ps[1][0].weight.shape
    ([4, 1], (4,))
    """
    shapes = _layer_shapes("init_mlp", m_in, sizes)
    rng = _args.seed("init_mlp", rng)
    return [[init_para(m, rng) for _ in range(n)] for m, n in shapes]


# ---------------------------------------------------------------- pre-lenses


@constructor
def linear_l(n: int) -> PreLens[D, D, tuple[Vec, Vec], tuple[Vec, Vec], Vec, Vec, VecLike, Vec]:
    """The scalar product of the weights and the input: ``a = Σ pᵢ sᵢ``.

    Haskell::

        linearL :: Int -> PreLens D D (V, V) (V, V) V V V V

    Forward ``(p, s) -> ((s, p), a)``; backward ``((s, p), da) -> (da·s, da·p)``; ``p``, ``s`` of length ``n``.

    >>> m, a = linear_l(2).fwd(np.array([-0.1, 0.1]), [2.0, 30.0])
    >>> round(a, 10)
    2.8
    >>> linear_l(2).bwd(m, 2.0)
    (array([ 4., 60.]), array([-0.2,  0.2]))
    """
    _args.count("linear_l", "n", n)
    name = f"linear_l({n})"

    def fwd(p: Vec, s: VecLike) -> tuple[tuple[Vec, Vec], D]:
        s_, p_ = own_vector(name, "input", s, n), own_vector(name, "weights", p, n)
        return (s_, p_), float(p_ @ s_)

    def bwd(m: tuple[Vec, Vec], da: D) -> tuple[Vec, Vec]:
        da = _real(name, "output delta", da)
        try:
            s, p = m
            ok = s.shape == (n,) and p.shape == (n,) and s.dtype == np.float64 and p.dtype == np.float64
        except (TypeError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise E.bad_residue(name, m)
        return da * s, da * p

    lens = PreLens(fwd, bwd, name, lambda rng: init_para(n, rng).weight)
    register_rule(lens, _linear_rule(n))  # what Shapes and Cost read in its place
    return lens


def own_vector(lens: str, what: str, x: Any, n: int | None = None) -> Vec:
    """``real_vector(lens, what, x, n)``, copied if that is ``x`` itself: a residue never aliases the caller's."""
    v = real_vector(lens, what, x, n)
    return v.copy() if v is x else v


def _real(lens: str, what: str, x: Any) -> Any:
    """``x`` if it is a real number (a ``D``; a 0-d array's, as loss_l takes), else an error naming the lens."""
    if is_real(x):
        return x
    if isinstance(x, np.ndarray) and x.shape == () and is_real(x[()]):
        return x[()]
    raise E.must_be(lens, what, "a real number (a float)", E.describe_tree(x))


def _bias_fwd(p: D, s: D) -> tuple[tuple[()], D]:
    return (), float(_real("bias_l", "bias", p)) + float(_real("bias_l", "input", s))  # D = Double


def _bias_bwd(dm: tuple[()], da: D) -> tuple[D, D]:
    da = _real("bias_l", "output delta", da)
    return da, da  # da/dp = 1, da/ds = 1


#: Add the bias: ``a = p + s``, no residue; ``init`` gives ``0.0``. Haskell: ``biasL :: PreLens D D () () D D D D``.
bias_l: PreLens[D, D, tuple[()], tuple[()], D, D, D, D] = PreLens(_bias_fwd, _bias_bwd, "bias_l", lambda rng: 0.0)


def _activ_fwd(p: tuple[()], s: D) -> tuple[D, D]:
    s = _real("activ_l", "input", s)
    return s, float(np.tanh(float(s)))  # in float64, whatever the input's type


def _activ_bwd(s: D, da: D) -> tuple[tuple[()], D]:
    da = _real("activ_l", "output delta", da)
    if not is_real(s):
        raise E.bad_residue("activ_l", s)
    return (), da * (1.0 - float(np.tanh(float(s))) ** 2)  # d tanh(s)/ds = 1 - tanh(s)²


#: ``a = tanh s``; the residue is the pre-activation ``s``. Haskell: ``activL :: PreLens D D D D () () D D``.
activ_l: PreLens[D, D, D, D, tuple[()], tuple[()], D, D] = PreLens(_activ_fwd, _activ_bwd, "activ_l")


@constructor
def affine_l(n: int) -> PreLens[D, D, Any, Any, tuple[D, Vec], tuple[D, Vec], VecLike, Vec]:
    """Deprecated: ``linear_l(n) >> bias_l`` (parameters ``(bias, weights)``, residue ``((s, w), ())``).

    >>> round(affine_l(2).fwd((0.01, np.array([-0.1, 0.1])), [2.0, 30.0])[1], 10)
    2.81
    """
    return (linear_l(n) >> bias_l).named(f"affine_l({n})")


def _para_to_blog(p: Para) -> tuple[tuple[()], tuple[D, Vec]]:
    """``unLunit . unPara``: a neuron's ``Para`` as the composite's ``((), (bias, weight))``."""
    return unlunit(un_para(p))


def _blog_to_para(dp: tuple[tuple[()], tuple[D, Vec]]) -> Para:
    """``mkPara . lunit``: the composite's ``((), (db, dw))`` as a ``Para``."""
    return mk_para(lunit(dp))


NeuronResidue = tuple[tuple[Vec, Vec], D]


def _unrunit_residue(dm: Any) -> Any:
    """``first unRunit`` on a neuron's residue ``((s, w), z)``, or an error if it is not one."""
    try:
        sw, z = dm
    except (TypeError, ValueError):
        raise E.bad_residue("neuron_l", dm) from None
    return (sw, ()), z


@constructor
def neuron_l(m_in: int) -> PreLens[D, D, NeuronResidue, NeuronResidue, Para, Para, VecLike, Vec]:
    """A neuron with ``m_in`` inputs: ``tanh(bias + Σ wᵢ sᵢ)``.

    Haskell::

        neuronL :: Int -> PreLens D D ((V, V), D) ((V, V), D) Para Para V V

    As the post builds it: ``(linear_l >> bias_l) >> activ_l`` re-packed (its ``f'``/``b'``) to
    parameters :class:`Para` and residue ``((s, w), z)``, ``z`` the pre-activation.

    >>> neuron = neuron_l(2)
    >>> m, a = neuron.fwd(Para(0.5, np.array([0.5, -0.5])), [1.0, 0.0])
    >>> round(a, 6), m
    (0.761594, ((array([1., 0.]), array([ 0.5, -0.5])), 1.0))
    >>> dp, ds = neuron.bwd(m, 1.0)
    >>> dp.weight.round(6), ds.round(6)
    (array([0.419974, 0.      ]), array([ 0.209987, -0.209987]))
    """
    m_in = _args.count("neuron_l", "m_in", m_in)
    composite = (linear_l(m_in) >> bias_l) >> activ_l
    neuron = composite.dimap_m(first(runit), _unrunit_residue).dimap_p(_para_to_blog, _blog_to_para)
    return replace(neuron.named(f"neuron_l({m_in})"), init_fn=lambda rng: init_para(m_in, rng))


@constructor
def layer_l(m_in: int, n_out: int) -> AnyLens:
    """Deprecated: ``from_tamb(layer(m_in, n_out))``, ``branch(n_out) >> vec_lens(n_out, neuron_l(m_in))`` unitless.

    >>> ps = [Para(0.0, np.array([1.0, 0.0])), Para(0.0, np.array([0.0, 1.0]))]
    >>> [round(a, 6) for a in layer_l(2, 2).fwd(ps, [0.5, -0.5])[1]]
    [0.462117, -0.462117]
    """
    body = branch(n_out) >> vec_lens(n_out, neuron_l(m_in))
    lens = body.dimap_m(lunit, unlunit).dimap_p(unrunit, runit)
    return replace(lens.named(f"layer_l({m_in}, {n_out})"), init_fn=lambda rng: init_mlp(m_in, [n_out], rng)[0])


@constructor
def make_mlp_l(m_in: int, sizes: Sequence[int]) -> AnyLens:
    """Deprecated: ``from_tamb(make_mlp(m_in, sizes))``; ``chain`` of :func:`layer_l`, ``init`` as :func:`init_mlp`.

    >>> mlp = make_mlp_l(3, [4, 1])
    >>> len(mlp.fwd(mlp.init(0), [1.0, 2.0, 3.0])[1])
    1
    """
    shapes = _layer_shapes("make_mlp_l", m_in, sizes)
    return chain(*(layer_l(m, n) for m, n in shapes)).named(f"make_mlp_l({m_in}, {[n for _, n in shapes]})")


# ---------------------------------------------------------------- TriLenses


def _after(tri: AnyTriLens, step: Callable[[Any], Any], name: str) -> AnyTriLens:
    """``step . tri``: the post's ``dimapX f g . tri``, a dimap applied to what ``tri`` returns."""
    return TriLens(lambda t: step(tri(t)), name)


@constructor
def linear_t(n: int) -> AnyTriLens:
    """``to_tamb(linear_l(n))``.

    Haskell::

        linearT :: Int -> TriLens D D (V, V) (V, V) V V V V
        linearT n = toTamb (linearL n)

    >>> from prelens import from_tamb
    >>> round(from_tamb(linear_t(2)).fwd(np.array([-0.1, 0.1]), [2.0, 30.0])[1], 10)
    2.8
    """
    n = _args.count("linear_t", "n", n)
    return TriLens(to_tamb(linear_l(n)).run, f"linear_t({n})")


#: ``to_tamb(bias_l)``. Haskell: ``biasT :: TriLens D D () () D D D D``.
bias_t: AnyTriLens = TriLens(to_tamb(bias_l).run, "bias_t")

#: ``to_tamb(activ_l)``. Haskell: ``activT :: TriLens D D D D () () D D``.
activ_t: AnyTriLens = TriLens(to_tamb(activ_l).run, "activ_t")


@constructor
def affine_t(n: int) -> AnyTriLens:
    """``tri_compose(linear_t(n), bias_t)``: parameters ``(bias, weights)``, residue ``((s, w), ())``.

    Haskell (the post's ``affineT``, which also strips the unit of the residue with ``dimapM``)::

        affineT :: Int -> TriLens D D (V, V) (V, V) (D, V) (D, V) V V
        affineT n = dimapM (first runit) (first unRunit) . triCompose (linearT n) biasT

    >>> from prelens import from_tamb
    >>> round(from_tamb(affine_t(2)).fwd((0.01, np.array([-0.1, 0.1])), [2.0, 30.0])[1], 10)
    2.81
    """
    n = _args.count("affine_t", "n", n)
    return TriLens(tri_compose(linear_t(n), bias_t).run, f"affine_t({n})")


@constructor
def neuron_t(m_in: int) -> AnyTriLens:
    """A neuron with ``m_in`` inputs as a TriLens, composed from its three parts.

    Haskell::

        neuronT :: Int -> TriLens D D ((V, V), D) ((V, V), D) Para Para V V
        neuronT mIn = dimapP (second (unLunit . unPara)) (second (mkPara . lunit))
                    . triCompose (dimapM (first runit) (first unRunit)
                                  . triCompose (linearT mIn) biasT) activT

    >>> from prelens import forward
    >>> round(forward(neuron_t(2), Para(0.01, np.array([-0.1, 0.1])), [2.0, 30.0]), 11)
    0.99277689893
    """
    m_in = _args.count("neuron_t", "m_in", m_in)
    affine = _after(affine_t(m_in), lambda t: dimap_m(first(runit), first(unrunit), t), "affine")
    body = tri_compose(affine, activ_t)
    return _after(body, lambda t: dimap_p(second(_para_to_blog), second(_blog_to_para), t), f"neuron_t({m_in})")


@constructor
def layer(m_in: int, n_out: int) -> AnyTriLens:
    """A layer: the input fanned out to ``n_out`` neurons of ``m_in`` inputs each.

    Haskell::

        layer :: Int -> Int -> TriLens V V [((V, V), D)] [((V, V), D)] [Para] [Para] V V
        layer mIn nOut = dimapP (second unRunit) (second runit)
                       . dimapM (first lunit) (first unLunit)
                       . triCompose (branch nOut) (vecLens nOut (neuronT mIn))

    Output: a list of ``n_out`` floats.

    >>> from prelens import forward
    >>> ps = [Para(0.0, np.array([1.0, 0.0])), Para(0.0, np.array([0.0, 1.0]))]
    >>> [round(a, 6) for a in forward(layer(2, 2), ps, [0.5, -0.5])]
    [0.462117, -0.462117]
    """
    m_in = _args.count("layer", "m_in", m_in)
    n_out = _args.count("layer", "n_out", n_out)
    body = tri_compose(branch_t(n_out), vec_lens(n_out, neuron_t(m_in)))

    def strip_units(t: Any) -> Any:
        return dimap_p(second(unrunit), second(runit), dimap_m(first(lunit), first(unlunit), t))

    return _after(body, strip_units, f"layer({m_in}, {n_out})")


@constructor
def make_mlp(m_in: int, sizes: Sequence[int]) -> AnyTriLens:
    """A multi-layer perceptron: layers of widths ``sizes`` composed in series.

    Haskell::

        makeMlp :: Int -> [Int] -> TriLens V V [[((V, V), D)]] [[((V, V), D)]] [[Para]] [[Para]] V V
        makeMlp mIn [n] = dimapP (second head) (second pure)
                        . dimapM (first pure) (first head)
                        . layer mIn n
        makeMlp mIn (n : ns) = dimapP (second (\\(p : ps) -> (ps, p))) (second (\\(ps, p) -> p : ps))
                             . dimapM (first (uncurry (:))) (first (\\(m : ms) -> (m, ms)))
                             . triCompose (layer mIn n) (makeMlp n ns)

    Layer ``k`` has ``sizes[k]`` neurons of ``sizes[k-1]`` inputs (``m_in`` for the first). Parameters
    (:func:`init_mlp`) and residues are lists, first layer first. Output: a list of ``sizes[-1]`` floats.

    >>> from prelens import forward
    >>> params = init_mlp(3, [4, 4, 1], np.random.default_rng(0))
    >>> out = forward(make_mlp(3, [4, 4, 1]), params, [2.0, 3.0, -1.0])
    >>> len(out), -1.0 < out[0] < 1.0
    (1, True)
    """
    shapes = _layer_shapes("make_mlp", m_in, sizes)
    name = f"make_mlp({m_in}, {[n for _, n in shapes]})"
    k = len(shapes)

    def layers(what: str, xs: Any) -> Any:
        if not isinstance(xs, list) or len(xs) != k:
            got = f"length {len(xs)}" if isinstance(xs, list) else E.describe(xs)
            raise E.must_be(name, what, f"a list of {k} layers", got)
        return xs

    def checked(t: Any) -> Any:
        t = dimap_m(first(lambda m: m), first(partial(layers, "residue deltas")), t)
        return dimap_p(second(partial(layers, "parameters")), second(lambda dp: dp), t)

    return _after(_mlp(shapes), checked, name)


def _mlp(shapes: list[tuple[int, int]]) -> AnyTriLens:
    """``makeMlp`` by recursion on the layers (see :func:`make_mlp`)."""
    (m, n), *rest = shapes
    if not rest:
        return _after(layer(m, n), _as_singletons, f"layer({m}, {n})")
    return _after(tri_compose(layer(m, n), _mlp(rest)), _cons_layers, "mlp")


def _as_singletons(t: Any) -> Any:
    """Residue ``m -> [m]`` and parameters ``[p] -> p`` (with the inverse maps on deltas)."""
    t = dimap_m(first(lambda m: [m]), first(lambda dms: dms[0]), t)
    return dimap_p(second(lambda ps: ps[0]), second(lambda dp: [dp]), t)


def _cons_layers(t: Any) -> Any:
    """``triCompose``'s ``(m, ms)`` and ``(ps, p)`` as the lists ``[m, *ms]`` and ``[p, *ps]``."""
    t = dimap_m(first(lambda m: [m[0], *m[1]]), first(lambda dm: (dm[0], list(dm[1:]))), t)
    return dimap_p(second(lambda ps: (list(ps[1:]), ps[0])), second(lambda dp: [dp[1], *dp[0]]), t)


def _layer_shapes(fn: str, m_in: int, sizes: Sequence[int]) -> list[tuple[int, int]]:
    """``[(inputs, neurons)]`` per layer as Python ints, checked: ``m_in`` then each size feeds the next layer."""
    m_in = _args.count(fn, "m_in", m_in)
    if not isinstance(sizes, (list, tuple)) or len(sizes) == 0:
        raise E.must_be(fn, "sizes", "a list of at least one layer width", repr(sizes))
    widths = [_args.count(fn, "every size", n) for n in sizes]
    return list(zip([m_in, *widths[:-1]], widths))


# ------------------------------------------------------- rules for Shapes and Cost: what each box makes and
# costs, read without running it; each rule checks the shapes it is given, as the lens checks its values.


def _shaped(lens: str, what: str, x: Any, shape: tuple[int, ...]) -> Any:
    if np.shape(x) != shape:
        expected = f"a vector of length {shape[0]}" if shape else "a real number (a float)"
        raise E.must_be(lens, what, expected, E.describe_tree(x))
    return x


def _linear_rule(n: int) -> Rule:
    name, vec = f"linear_l({n})", placeholder((n,))

    def forward(p: Any, s: Any) -> tuple[Any, Any]:
        _shaped(name, "weights", p, (n,))
        _shaped(name, "input", s, (n,))
        return (vec, vec), 0.0

    def backward(m: Any, da: Any) -> tuple[Any, Any]:
        _shaped(name, "output delta", da, ())
        return vec, vec

    return Rule(forward, backward, lambda p, s: (n, 2 * n))


def _scalar_rule(name: str, residue: Any, madds: tuple[int, int], dp: Any) -> Rule:
    def forward(p: Any, s: Any) -> tuple[Any, Any]:
        if dp != ():
            _shaped(name, "bias", p, ())
        _shaped(name, "input", s, ())
        return residue, 0.0

    def backward(m: Any, da: Any) -> tuple[Any, Any]:
        return dp, _shaped(name, "output delta", da, ())

    return Rule(forward, backward, lambda p, s: madds)


register_rule(bias_l, _scalar_rule("bias_l", (), (1, 0), 0.0))  # a + b; its deltas are da itself
register_rule(activ_l, _scalar_rule("activ_l", 0.0, (1, 2), ()))  # tanh s; da·(1 − tanh² s)
