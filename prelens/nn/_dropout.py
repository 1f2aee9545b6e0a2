"""Dropout as a lens whose randomness is its parameter, a :class:`DropoutKey`, which *is* the mode
(docs/learning.md): ``DropoutKey(())`` is evaluation, the identity; ``DropoutKey(key)`` draws the mask from
``numpy.random.Philox(key=key)``, bit for bit on every library. Under ``jax.jit`` a key is a traced JAX key's
``uint32`` words and JAX draws the mask inside the program (:func:`with_jax_keys`, docs/backends.md).

>>> import numpy as np
>>> drop = dropout(0.5)
>>> x = np.ones((2, 4))
>>> drop.fwd(drop.init(0), x)[1] is x
True
>>> p = with_dropout(drop.init(0), 7)
>>> drop.fwd(p, x)[1]
array([[2., 0., 0., 0.],
       [0., 2., 0., 2.]])
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import (
    constant_like,
    dtype_name,
    is_array,
    is_concrete,
    is_float,
    namespace,
    to_numpy,
)
from prelens.core import _args as A
from prelens.core._check import Arr, Expects, Like
from prelens.core._lens import AnyLens, PreLens
from prelens.core._registry import constructor
from prelens.nn._fastcheck import Array

__all__ = ["DropoutKey", "dropout", "with_dropout", "without_dropout"]

_KEY_SHAPE = (2,)


class DropoutKey(NamedTuple):
    """The parameter of :func:`dropout`: ``key=()`` for evaluation, two ``uint64`` words for training.

    >>> DropoutKey(())
    DropoutKey(key=())
    """

    key: Any


def _is_key(k: Any) -> bool:
    if isinstance(k, np.ndarray):
        return bool(k.dtype == np.uint64) and k.shape == _KEY_SHAPE
    if not is_array(k) or tuple(k.shape) != _KEY_SHAPE:
        return False
    return dtype_name(k.dtype) == "uint64" or (not is_concrete(k) and dtype_name(k.dtype) == "uint32")


@constructor
def dropout(rate: float) -> AnyLens:
    """Inverted dropout ``x ↦ x ⊙ mask / (1 − rate)``, its randomness the parameter :class:`DropoutKey`.

    ``rate`` in ``[0, 1)`` is the probability of dropping an entry. With
    ``DropoutKey(())`` (what ``init`` makes) the lens is the identity; with a
    key (see :func:`with_dropout`) it draws the mask from ``Philox(key)``.
    Input: any float array; output of its shape and dtype.

    >>> drop = dropout(0.25)
    >>> drop, drop.init(0)
    (dropout(0.25), DropoutKey(key=()))
    >>> m, y = drop.fwd(with_dropout(drop.init(0), 0), np.ones(8))
    >>> y.round(2)
    array([0.  , 0.  , 0.  , 1.33, 1.33, 1.33, 1.33, 1.33])
    >>> drop.bwd(m, np.full(8, 3.0))[1].round(2)
    array([0., 0., 0., 4., 4., 4., 4., 4.])
    """
    r = A.real("dropout", "rate", rate, low=0.0, high=1.0)
    name = f"dropout({r:g})"  # as the blocks show it (a numpy rate too)
    scale = 1.0 / (1.0 - r)

    def fwd(p: DropoutKey, x: Array) -> tuple[Any, Array]:
        key = _key_of(name, p)
        if type(key) is tuple:  # no key: evaluation, the identity
            return (), x
        mask = _host_mask(name, key, x, r, scale) if is_concrete(key) else _traced_mask(key, x, r, scale)
        return (mask, namespace(key).zeros_like(key)), x * mask  # the key's delta: zeros of its library

    def bwd(m: Any, da: Array | None) -> tuple[DropoutKey, Array | None]:
        if type(m) is tuple and m == ():
            return DropoutKey(()), da
        if type(m) is not tuple or len(m) != 2 or not is_float(m[0]) or not _is_key(m[1]):
            raise E.bad_residue(name, m)
        mask, zero = m
        return DropoutKey(namespace(zero).zeros_like(zero)), None if da is None else da * mask  # None: data's

    # the delta: like the mask (training), any float array (evaluation), or None (the delta of data)
    like = Like(lambda m: (m[0], tuple(m[0].shape)) if m else (None, (...,)), or_none=True)
    return PreLens(fwd, bwd, name, lambda rng: DropoutKey(()), expects=Expects(input=Arr(None, ...), delta=like))


def _key_of(name: str, p: Any) -> Any:
    """``()`` or the key array of a :class:`DropoutKey` (a plain 1-tuple is accepted too)."""
    if isinstance(p, tuple) and len(p) == 1 and (not hasattr(p, "_fields") or type(p) is DropoutKey):
        k = p[0]
        if (type(k) is tuple and k == ()) or _is_key(k):
            return k
    expected = "DropoutKey(()) (evaluation) or DropoutKey(uint64[2]) (training: see with_dropout)"
    raise E.must_be(name, "parameters", expected, E.describe_tree(p))


def _host_mask(name: str, key: Any, x: Any, rate: float, scale: float) -> Any:
    """The scaled mask for ``x`` drawn by numpy's ``Philox(key)``, as an array of ``x``'s library and dtype."""
    gen = np.random.Generator(np.random.Philox(key=key if isinstance(key, np.ndarray) else to_numpy(key)))
    kind = dtype_name(x.dtype)
    draws = gen.random(tuple(x.shape), dtype=np.float32 if kind == "float32" else np.float64)
    try:
        mask_dt = np.dtype(kind)
    except TypeError:  # a float numpy does not know (bfloat16): made in float32, then cast
        mask_dt = np.dtype(np.float32)
    mask = constant_like(np.multiply(draws >= rate, scale, dtype=mask_dt), x)
    return mask if mask_dt.name == kind else namespace(x).astype(mask, x.dtype)


def _traced_mask(key: Any, x: Any, rate: float, scale: float) -> Any:
    """The scaled mask for ``x`` drawn by JAX from a traced JAX key (its ``uint32[2]`` words)."""
    import jax
    import jax.numpy as jnp

    if dtype_name(key.dtype) != "uint32":
        raise E.must_be("dropout", "key", "a JAX key's uint32[2] words under jax.jit", E.describe(key))
    draws = jax.random.uniform(jax.random.wrap_key_data(key), tuple(x.shape), dtype=x.dtype)
    return jnp.where(draws >= rate, jnp.asarray(scale, x.dtype), jnp.asarray(0, x.dtype))


def with_jax_keys(params: Any, key: Any) -> Any:
    """``params`` with dropout on, for JAX: site ``i`` gets the ``uint32[2]`` words of ``fold_in(key, i)``;
    ``key`` a JAX key or its raw words, concrete or traced (:func:`~prelens.train.compile_step`'s)."""
    import jax

    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    return _map_keys(params, lambda i: DropoutKey(jax.random.key_data(jax.random.fold_in(key, i))))


def with_dropout(params: Any, key: int) -> Any:
    """``params`` with dropout on: the ``i``-th :class:`DropoutKey` (in tree order) gets the key ``(key, i)``.

    ``key`` is an int in ``[0, 2⁶⁴)``: a trainer draws one per step (from its
    seeded generator), so every step and every site has its own mask. Every
    other leaf is kept (not copied). Parameters without dropout come back equal.

    >>> with_dropout([DropoutKey(()), 1.0, (DropoutKey(()),)], 5)
    [DropoutKey(key=array([5, 0], dtype=uint64)), 1.0, (DropoutKey(key=array([5, 1], dtype=uint64)),)]
    """
    if not isinstance(key, (int, np.integer)) or isinstance(key, (bool, np.bool_)) or not 0 <= key < 2**64:
        raise E.bad_argument("with_dropout", "key", key, "an int in [0, 2**64)")
    word = np.uint64(key)
    return _map_keys(params, lambda i: DropoutKey(np.array([word, i], dtype=np.uint64)))


def without_dropout(tree: Any) -> Any:
    """``tree`` with every :class:`DropoutKey` reset to ``DropoutKey(())`` (evaluation; no key).

    A trainer maps the gradient of a step run :func:`with_dropout` back with it,
    so that it has the structure of the parameters the optimiser holds.

    >>> without_dropout((DropoutKey(np.zeros(2, np.uint64)), 2.0))
    (DropoutKey(key=()), 2.0)
    """
    return _map_keys(tree, lambda _: DropoutKey(()))


def then_dropout(lens: AnyLens, rate: float) -> AnyLens:
    """``lens >> dropout(rate)``, or ``lens`` itself when ``rate`` is 0 (a sub-layer of a block)."""
    return lens if rate == 0.0 else lens >> dropout(rate)


def keyed_params(
    p_to: Callable[[Any], Any], p_from: Callable[[Any], Any], fields: tuple[str, ...]
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """A block's parameter isos ``p_to``/``p_from`` (its named tuple ``P`` to its body's and back) with a dropout
    after the sub-layers ``fields``: parameters ``(P, keys)``, each field's sub-layer taking ``(key, params)``."""

    def to(pk: Any) -> Any:
        p, keys = pk
        return p_to(p._replace(**{f: (k, getattr(p, f)) for f, k in zip(fields, keys)}))

    def back(dp: Any) -> Any:
        d = p_from(dp)
        return d._replace(**{f: getattr(d, f)[1] for f in fields}), tuple(getattr(d, f)[0] for f in fields)

    return to, back


def _map_keys(tree: Any, f: Callable[[int], DropoutKey], sites: Iterator[int] | None = None) -> Any:
    """``tree`` with its ``i``-th :class:`DropoutKey` (tree order) replaced by ``f(i)``; tuples, lists, dicts walked."""
    sites = itertools.count() if sites is None else sites
    if type(tree) is DropoutKey:
        return f(next(sites))
    if isinstance(tree, dict):
        return {k: _map_keys(v, f, sites) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_map_keys(v, f, sites) for v in tree]
    if isinstance(tree, tuple):
        children = [_map_keys(v, f, sites) for v in tree]
        return type(tree)(*children) if hasattr(tree, "_fields") else tuple(children)
    return tree
