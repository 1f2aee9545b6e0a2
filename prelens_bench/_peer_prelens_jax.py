"""prelens itself on JAX, compiled: the same lenses as the ``prelens`` column, one :func:`compile_step`.

The model and loss are the ``prelens`` column's own (:func:`prelens_bench.peers.trained_parts`);
:func:`prelens.train.compile_step` traces forward, backward and the SGD update
into one ``jax.jit`` program. The step is timed as a user's loop runs it: the
parameters and optimiser state passed in are the previous call's outputs (JAX
arrays), and the batch was put on the device once, with ``step.place(...,
batch=True)``, before the loop.

Two checks run before anything is timed: the gradient (the same compiled
forward and backward, with an "optimiser" that returns the gradient as the
new parameters, so nothing is divided by the learning rate) is compared with
numpy's by :func:`~prelens_bench.check_peer_gradients` as every peer's is, and
the timed program's first update with numpy's ``sgd`` update from the same
weights.

Imported only by :data:`prelens_bench.peers.PRELENS_JAX` (``jax`` is the optional extra ``peers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prelens import errors as E
from prelens.backend._arrays import to_numpy, tree_map_arrays
from prelens.core._trace import vjp
from prelens.learn import sgd
from prelens.train import compile_step

if TYPE_CHECKING:
    from prelens_bench._problem import PeerStep, Problem

try:
    import jax
except ImportError as exc:  # pragma: no cover - only without the extra
    raise E.missing_extra("prelens bench --peers", "jax", "peers") from exc

__all__ = ["prepare"]

NAME = "prelens JAX"


class _GradientOut:
    """An optimiser whose update is the gradient itself: ``compile_step`` with it returns the gradient."""

    def init(self, params: Any) -> tuple[()]:
        return ()

    def update(self, grads: Any, state: Any, params: Any) -> tuple[Any, Any]:
        return grads, state


def prepare(problem: Problem) -> PeerStep:
    """The :class:`~prelens_bench.peers.PeerStep` of ``problem`` in prelens on JAX, compiled and checked here."""
    from prelens_bench._problem import PeerStep, check_peer_gradients, trained_parts

    model, loss = trained_parts(problem.case)
    opt = sgd(problem.lr)
    compiled = compile_step(model, loss, opt)
    params0 = compiled.place(problem.params)
    batch = compiled.place((problem.x, problem.y), batch=True)
    opt_state = compiled.place(opt.init(problem.params))
    first = jax.block_until_ready(compiled(params0, opt_state, batch))  # traces and compiles here

    _, pullback = vjp(model >> loss, (problem.y, problem.params), problem.x)
    (_, grads_np), _ = pullback(1.0)
    expected = opt.update(grads_np, opt.init(problem.params), problem.params)[0]
    check_peer_gradients(NAME, problem.case, expected, _host(first[0]), what="parameters after one SGD step")

    state = [params0, opt_state]

    def step() -> None:
        state[0], state[1], value = compiled(state[0], state[1], batch)
        jax.block_until_ready((state[0], value))

    def grads() -> Any:  # at the current weights, as the prelens column's
        gradient = compile_step(model, loss, _GradientOut())
        return _host(gradient(state[0], (), batch)[0])

    return PeerStep(step, grads)


def _host(tree: Any) -> Any:
    return tree_map_arrays(to_numpy, tree)
