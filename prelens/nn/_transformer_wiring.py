"""Wiring shared by the transformer lenses: re-parametrisation, rematerialisation, attention probes.

Composites built from ``>>``, ``@`` and :func:`~prelens.chain` have parameters and residues nested the
way they were built; :func:`reparam` shows one through isomorphisms (``dimap_p``, ``dimap_m``) so that
users see a named tuple such as ``AttentionParams``. :func:`remat` is gradient checkpointing. Attention
probes say where in a model's residue each attention matrix lies, for :func:`attention_weights`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import copy, dtype_kind, dtype_name, is_array
from prelens.core._combinators import REMAT_OF, keeps_full_residues
from prelens.core._lens import AnyLens, PreLens, as_lens
from prelens.core._registry import constructor
from prelens.core._tree import structure_mismatch, tree_map, tree_paths
from prelens.nn._fastcheck import Array
from prelens.show._summary import register_opening

Fn = Callable[[Any], Any]
#: name -> function from the lens's residue to an attention array ``(batch, heads, Tq, Tk)``.
Probes = dict[str, Callable[[Any], Array]]

#: A lens's forward pass -> its probes (a lens under another name has the same pass and residue).
_PROBES: weakref.WeakKeyDictionary[Callable[..., Any], Probes] = weakref.WeakKeyDictionary()


def reparam(
    lens: AnyLens,
    name: str,
    *,
    p_to: Fn,
    p_from: Fn,
    m_to: Fn | None = None,
    m_from: Fn | None = None,
) -> AnyLens:
    """``lens`` seen through a parameter isomorphism (and optionally a residue one).

    ``p_to`` maps the new parameters to ``lens``'s, ``p_from`` maps ``lens``'s parameter deltas (and
    parameters) back; ``m_to``/``m_from`` the same for the residue. The initializer is ``p_from ∘ lens.init``.

    >>> from prelens import id_pre_lens
    >>> wire = reparam(id_pre_lens >> id_pre_lens, "wire", p_to=lambda p: ((), ()), p_from=lambda dp: ())
    >>> wire, wire.init(0), wire.fwd((), 3.0)
    (wire, (), (((), ()), 3.0))
    """
    inner_init = lens.init_fn
    init = None if inner_init is None else (lambda rng: p_from(inner_init(rng)))

    def p_to_checked(p: Any) -> Any:
        try:
            return p_to(p)
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            expected = "its own parameters (as its init makes them)"
            if init is not None:  # only on the error path: make a set to name their type
                expected = E.describe(init(np.random.default_rng(0)))
            raise E.must_be(name, "parameters", expected, E.describe_tree(p)) from None

    out = lens.dimap_p(p_to_checked, p_from)
    if m_to is not None and m_from is not None:
        out = out.dimap_m(m_to, m_from)
    run = out.fwd

    def fwd(p: Any, s: Any) -> Any:
        try:
            return run(p, s)
        except E.PrelensError as err:  # only on the error path: say where the parameters are off
            found = None if init is None else params_misfit(init(np.random.default_rng(0)), p)
            if found is None:
                raise
            raise _with_params_path(err, name, found) from err.__cause__

    return register_opening(PreLens(fwd, out.bwd, name, init, "", (lens,)), p_to)


def _with_params_path(err: E.PrelensError, lens: str, found: str) -> E.PrelensError:
    """``err`` with a line saying where the parameters given to ``lens`` differ from its init's (an
    enclosing model replaces the line of the model inside it: the path is from the user's parameters)."""
    base = getattr(err, "_prelens_base", str(err))
    try:
        new = type(err)(
            f"{base}\n  the parameters given to {E.short_name(lens)} differ from what its init makes {found}"
        )
    except TypeError:  # an error class with a richer constructor: leave it as it is
        return err
    new.__dict__.update(err.__dict__)
    E.mark(new, _prelens_base=base)
    new.__cause__ = err.__cause__
    return new


def params_misfit(expected: Any, got: Any) -> str | None:
    """Where the tree ``got`` first differs from ``expected`` in structure, shape or dtype, or None.

    >>> params_misfit((np.zeros(2), [np.zeros(3)]), (np.zeros(2), [np.zeros(3, np.float32)]))
    'at [1][0]: expected f64[3], got f32[3]'
    """
    found = structure_mismatch(expected, got, shapes=True)
    if found is not None:
        return found
    for (path, a), (_, b) in zip(tree_paths(expected), tree_paths(got)):
        if isinstance(a, np.ndarray) and (not is_array(b) or dtype_name(a.dtype) != dtype_name(b.dtype)):
            return E.at_path(path, E.describe(a), E.describe(b))
    return None


@constructor
def remat(lens: AnyLens) -> AnyLens:
    """``lens`` that keeps only ``(p, s)`` in its residue and re-runs its forward pass in ``bwd`` (checkpointing).

    Gradient checkpointing (JAX's ``jax.remat``): one more forward pass for the memory of the residue.
    Same outputs, same ``(dp, ds)`` (tested equal to the plain lens). ``remat`` each block of a deep
    model to hold only the blocks' inputs between the passes (:func:`prelens_bench.memory.remat_lm`).
    It also makes two lenses that compute one function with different residues comparable by
    :func:`~prelens.testing.check_lens_equal`.

    >>> from prelens import PreLens
    >>> square = PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square")
    >>> r = remat(square)
    >>> r, r.fwd((), 3.0), r.bwd(((), 3.0), 1.0)
    (remat(square), (((), 3.0), 9.0), ((), 6.0))
    """
    fwd, bwd = as_lens("remat", "lens", lens).fwd, lens.bwd
    name = f"remat({lens!r})"

    def fwd_(p: Any, s: Any) -> tuple[Any, Any]:
        if keeps_full_residues():  # Cost's reading of the residue without remat
            return fwd(p, s)
        a = fwd(p, s)[1]  # the inner residue dropped at once, before the copies are made
        return tree_map(_copied, (p, s)), a  # a residue never aliases the caller's arrays

    def bwd_(m: tuple[Any, Any], da: Any) -> tuple[Any, Any]:
        if not (isinstance(m, tuple) and len(m) == 2):
            raise E.not_a_pair(name, "residue", "(p, s), as its forward pass returned it", m)
        p, s = m
        return bwd(fwd(p, s)[0], da)

    made = PreLens(fwd_, bwd_, name, lens.init_fn, "", (lens,))
    REMAT_OF[made] = lens
    return made


def _copied(x: Any) -> Any:
    return copy(x) if is_array(x) else x


def with_probes(lens: AnyLens, probes: Mapping[str, Callable[[Any], Array]]) -> AnyLens:
    """Record, for ``lens``, where its attention matrices lie in its residue; returns ``lens``."""
    _PROBES[lens.fwd] = dict(probes)  # by its forward pass: the lens under another name (``named``) has it too
    return lens


def probes_of(lens: AnyLens) -> Probes:
    """The probes of ``lens``, its own or found through ``>>``, ``@`` and ``chain``, by name (``"block0.self"``;
    ``""``: a bare attention lens)."""
    own = _PROBES.get(lens.fwd)
    if own is not None:
        return own
    inner = REMAT_OF.get(lens)
    if inner is not None:  # its residue is (p, s): the inner residue is made again
        return {key: _recomputed(inner, get) for key, get in probes_of(inner).items()}
    if lens.op in (">>", "@", "chain"):
        found: Probes = {}
        for i, part in enumerate(lens.parts):
            for key, get in probes_of(part).items():
                name, k = key, 2
                while name in found:  # two parts with one name: "key#2", "key#3", ...
                    name, k = f"{key or 'attention'}#{k}", k + 1
                found[name] = _through(get, i)
        return found
    return {}


def _through(g: Callable[[Any], Array], i: int) -> Callable[[Any], Array]:
    return lambda m: g(m[i])


def _recomputed(inner: AnyLens, g: Callable[[Any], Array]) -> Callable[[Any], Array]:
    return lambda m: g(inner.fwd(*m)[0])


def attention_weights(model: AnyLens, residue: Any) -> dict[str, Array]:
    """The attention matrices of every attention lens in ``model``, read from a residue.

    ``residue`` is what ``model.fwd(p, s)`` returned as its residue (or what
    :func:`prelens.vjp` closed over); nothing is recomputed but inside a :func:`remat`, whose residue is
    only ``(p, s)``: its weights are made again from them. Keys name the
    attention lens: ``"attention"`` for a bare one, ``"block0.self"``,
    ``"decoder1.cross"``, ... for models. Each value has shape
    ``(batch, heads, T_query, T_key)`` (``(heads, T_query, T_key)`` for one unbatched sequence) and rows that
    sum to 1; numpy's are read-only views of the residue (other libraries': copies). Lenses composed
    with ``>>``, ``@`` and :func:`~prelens.chain` are searched.

    >>> import numpy as np
    >>> from prelens.nn import multi_head_attention
    >>> mha = multi_head_attention(8, 2, causal=True)
    >>> m, y = mha.fwd(mha.init(0), np.ones((3, 5, 8)))
    >>> {k: v.shape for k, v in attention_weights(mha, m).items()}
    {'attention': (3, 2, 5, 5)}
    """
    probes = probes_of(as_lens("attention_weights", "model", model))
    if not probes:
        raise E.StructureError(
            f"{model!r}: has no attention lenses to read weights from (build it with prelens.nn's "
            "attention constructors, composed with >>, @ or chain)"
        )
    out: dict[str, Array] = {}
    for key, get in probes.items():
        try:
            weights = get(residue)
        except (IndexError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise E.not_a_residue_of(repr(model), f"{type(exc).__name__}: {exc}") from exc
        if not (is_array(weights) and weights.ndim >= 3 and dtype_kind(weights.dtype) == "f"):
            got = E.describe(weights)
            raise E.not_a_residue_of(
                repr(model), f"at {key or 'attention'}: expected float weights (..., H, T_q, T_k), got {got}"
            )
        out[key or "attention"] = _read_only(weights)
    return out


def _read_only(weights: Array) -> Array:
    """The residue's weights as the caller may hold them: numpy's a read-only view, another library's a copy (the
    backward pass reads them: written into, they would change its gradients)."""
    if not isinstance(weights, np.ndarray):
        return copy(weights)
    view = weights.view()
    view.flags.writeable = False
    return view
