"""A whole training step, compiled: :func:`~prelens.train.step`'s core (the function ``fit`` runs on the host)
traced by JAX into one XLA program (see :func:`compile_step`); checks that need values are one flag it returns."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from prelens import errors as E
from prelens.backend._arrays import to_backend
from prelens.core import _args
from prelens.core._lens import AnyLens, as_lens
from prelens.core._tree import tree_leaves
from prelens.nn._dropout import with_jax_keys
from prelens.train._data import has_dropout, keyed
from prelens.train._step import optimizer_form, step_of

Tree = Any

__all__ = ["CompiledStep", "compile_step"]


class CompiledStep:
    """One training step of ``model >> loss`` compiled by JAX; call it as ``step(params, opt_state, batch)``.

    Returns ``(new_params, new_opt_state, loss)``: JAX arrays (``loss`` a 0-d one, the loss at ``params``, before
    the update). Pure: the arguments are not modified. numpy arguments are moved to JAX first (float64 turns on
    JAX's 64-bit mode); pass the returned JAX arrays back in a loop. Made by :func:`compile_step`.

    >>> from prelens.nn import linear, mse
    >>> from prelens.learn import sgd
    >>> compile_step(linear(3, 1), mse, sgd(0.1))
    compile_step(linear(3→1) >> mse)
    """

    def __init__(self, name: str, pure: Callable[..., tuple[Tree, Any, Any, Any]], mesh: Any, axis: str | None) -> None:
        import jax

        self.name, self.mesh, self.axis = name, mesh, axis

        def plain(params: Tree, state: Any, xs: Any, targets: Any, key: Any) -> tuple[Tree, Any, Any]:
            return pure(params, state, xs, targets, key)[:3]  # no finiteness flag: XLA drops its reductions

        jit: Any = jax.jit
        self._batch_sharding = self._replicated = None
        if mesh is not None:
            from jax.sharding import NamedSharding, PartitionSpec

            shard, rep = NamedSharding(mesh, PartitionSpec(axis)), NamedSharding(mesh, PartitionSpec())
            self._batch_sharding, self._replicated = shard, rep
            jit = functools.partial(jax.jit, in_shardings=(rep, rep, shard, shard, rep), out_shardings=rep)
        self._jitted, self._jitted_plain = jit(pure), jit(plain)

    def __repr__(self) -> str:
        where = "" if self.mesh is None else f", data-parallel over {self.mesh.shape[self.axis]} devices"
        return f"compile_step({self.name}{where})"

    def place(self, tree: Tree, *, batch: bool = False) -> Tree:
        """``tree`` as JAX arrays where the step wants them: a batch split over the mesh, the rest replicated (without
        a mesh, on JAX's default device). Placing the data once, before a loop, saves a transfer per step."""
        import jax

        if self.mesh is not None and batch:
            n_dev = self.mesh.shape[self.axis]
            for leaf in tree_leaves(tree):
                if getattr(leaf, "ndim", 0) == 0 or leaf.shape[0] % n_dev:
                    what = f"a batch whose leading axis divides among the mesh's {n_dev} devices"
                    raise E.must_be(repr(self), "batch", what, E.describe_tree(tree))
        moved = tree if _all_jax(tree) else to_backend(tree, "jax")
        where = self._batch_sharding if batch else self._replicated
        return moved if where is None else jax.device_put(moved, where)

    def run(
        self, params: Tree, opt_state: Any, batch: tuple[Any, Any], *, key: Any = None
    ) -> tuple[Tree, Any, Any, Any]:
        """:meth:`__call__`, and a 0-d boolean: the loss, parameters and state all finite (one more output, so a
        program of its own, compiled on its first call)."""
        return cast(tuple[Tree, Any, Any, Any], self._call(self._jitted, params, opt_state, batch, key))

    def __call__(
        self, params: Tree, opt_state: Any, batch: tuple[Any, Any], *, key: Any = None
    ) -> tuple[Tree, Any, Any]:
        return cast(tuple[Tree, Any, Any], self._call(self._jitted_plain, params, opt_state, batch, key))

    def _call(self, program: Any, params: Tree, opt_state: Any, batch: tuple[Any, Any], key: Any) -> Any:
        if type(batch) is not tuple or len(batch) != 2:
            _args.batch(repr(self), batch)
        xs, targets = batch
        if key is not None:
            key = _key_words(repr(self), key)
        if self.mesh is None and _all_jax((params, opt_state, xs, targets)):
            # a loop passing back the last step's outputs, with a batch placed once: nothing to move
            return program(params, opt_state, xs, targets, key)
        params, opt_state = self.place(params), self.place(opt_state)
        xs, targets = self.place(xs, batch=True), self.place(targets, batch=True)
        return program(params, opt_state, xs, targets, key if key is None else self.place(key))


def compile_step(
    model: AnyLens,
    loss: AnyLens,
    optimizer: Any,
    *,
    penalty: AnyLens | None = None,
    mesh: Any = None,
    axis: str | None = None,
) -> CompiledStep:
    """One training step of ``model >> loss`` and ``optimizer``, compiled by JAX into one program.

    ``optimizer`` is an optimiser of :mod:`prelens.learn` or its lens (``opt.lens``); ``penalty`` an L2 term as in
    :func:`~prelens.train.fit`. The step is traced on its first call (and again if the shapes change): every lens
    checks its inputs then, in Python, and the compiled program only computes. ``mesh``: a
    :class:`jax.sharding.Mesh` to train data-parallel over, the batch split along ``axis`` (the mesh's first axis by
    default), the parameters replicated and the deltas summed by XLA (equal to one device's up to rounding). A model
    with dropout needs a fresh key each step: ``step(..., key=n)``, an int ``n`` (or a JAX key); each dropout site
    gets its own JAX key folded from it, and JAX draws the masks inside the program (the same distribution as
    numpy's masks, other draws).

    >>> import numpy as np
    >>> from prelens.nn import mlp, mse
    >>> from prelens.learn import sgd
    >>> model = mlp(2, [4, 1])
    >>> step = compile_step(model, mse, sgd(0.1))
    >>> params = model.init(0)
    >>> batch = (np.ones((8, 2)), np.zeros((8, 1)))
    >>> new_params, state, loss = step(params, (), batch)
    >>> type(loss).__module__.startswith("jax"), float(loss) > 0
    (True, True)
    """
    model = as_lens("compile_step", "model", model)
    loss = as_lens("compile_step", "loss", loss)
    if penalty is not None:
        penalty = as_lens("compile_step", "penalty", penalty)
    lens_form = optimizer_form("compile_step", optimizer)
    try:
        import jax  # noqa: F401
    except ImportError:
        raise E.bad_argument("compile_step", "backend", "jax", "installed: pip install 'prelens[jax]'") from None
    if mesh is not None:
        from jax.sharding import Mesh

        if not isinstance(mesh, Mesh):
            raise E.must_be("compile_step", "mesh", "a jax.sharding.Mesh or None", E.describe(mesh))
        axis = mesh.axis_names[0] if axis is None else axis
        if axis not in mesh.axis_names:
            raise E.not_one_of("compile_step", "axis", tuple(mesh.axis_names), axis)
    elif axis is not None:
        raise E.bad_argument("compile_step", "axis", axis, "None without a mesh")
    name = f"{model.name} >> {loss.name}"
    return CompiledStep(name, _pure_step(model, loss, optimizer, lens_form, penalty), mesh, axis)


def _pure_step(model: AnyLens, loss: AnyLens, optimizer: Any, lens_form: bool, penalty: AnyLens | None) -> Any:
    """The step of :func:`~prelens.train.step` as a pure function of ``(params, opt_state, xs, targets, key)``;
    with dropout sites, ``keyed(model, with_jax_keys)`` on ``(key, xs)``."""
    cores = {
        dropout: step_of(keyed(model, with_jax_keys) if dropout else model, loss, optimizer, lens_form, penalty)
        for dropout in (False, True)
    }

    def pure(params: Tree, state: Any, xs: Any, targets: Any, key: Any) -> tuple[Tree, Any, Any, Any]:
        dropout = has_dropout(params)
        if dropout and key is None:
            raise E.bad_argument("compile_step", "key", None, "a key for a model with dropout (step(..., key=n))")
        new_params, new_state, value = cores[dropout](params, state, (key, xs) if dropout else xs, targets)
        return new_params, new_state, value, _all_finite((value, new_params, new_state))

    return pure


def _key_words(fn: str, key: Any) -> Any:
    """A step's dropout key as the two ``uint32`` words of a JAX key: from an int in ``[0, 2**64)``, or a JAX key."""
    import jax

    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)) and 0 <= key < 2**64:
        k = int(key)
        return np.array([k >> 32, k & 0xFFFFFFFF], dtype=np.uint32)
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    raise E.bad_argument(fn, "key", key, "an int in [0, 2**64) or a JAX key (jax.random.key(n))")


def _all_finite(tree: Tree) -> Any:
    """A 0-d JAX boolean: every float leaf of ``tree`` finite (one reduction per leaf, inside the program)."""
    import jax.numpy as jnp

    floats = [
        x for x in tree_leaves(tree) if (np.dtype(x.dtype).kind == "f" if hasattr(x, "dtype") else type(x) is float)
    ]
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in floats])) if floats else jnp.asarray(True)


def _all_jax(tree: Tree) -> bool:
    """Every array leaf of ``tree`` a JAX array (JAX's own flattening: a step's per-call check stays cheap)."""
    import jax

    try:
        leaves = jax.tree_util.tree_leaves(tree)
    except (TypeError, ValueError):  # a tree JAX cannot flatten (dict keys that do not sort): prelens's walk
        leaves = tree_leaves(tree)
    for x in leaves:
        if type(x) in _JAX_ARRAY_TYPES or not hasattr(x, "dtype"):
            continue
        if not isinstance(x, jax.Array):  # jax.Array's isinstance is slow: each type is asked once
            return False
        _JAX_ARRAY_TYPES.add(type(x))
    return True


#: The concrete types found to be JAX arrays so far (``jax.Array`` is an abstract base).
_JAX_ARRAY_TYPES: set[type] = set()
