"""The peers' JAX side: the benchmark's models written by hand in JAX, the whole step under ``jax.jit``.

The loss is a plain function of the parameters (prelens's named tuples are
JAX pytrees as they are); ``jax.value_and_grad`` and the SGD update
``p − lr·g`` are compiled together into one XLA program, as a JAX user writes
a training step. float64 cases switch on ``jax_enable_x64`` (for the process).

Imported only by :func:`prelens_bench.peers.JAX_JIT` (``jax`` is the optional extra ``peers``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from prelens import errors as E
from prelens.nn._dot_attention import MASKED
from prelens_bench.lm import LMConfig

if TYPE_CHECKING:
    from prelens_bench._problem import PeerStep, Problem

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # pragma: no cover - only without the extra
    raise E.missing_extra("prelens bench --peers", "jax", "peers") from exc

__all__ = ["prepare"]


def _mlp_loss(params: Any, x: Any, y: Any) -> Any:
    h = x
    for p in params:
        h = jnp.tanh(h @ p.weight + p.bias)
    return jnp.mean((h - y) ** 2)


def _layer_norm(x: Any, p: Any, eps: float) -> Any:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * p.gain + p.bias


def _lm_loss(cfg: LMConfig) -> Any:
    d, h = cfg.d_model, cfg.n_heads
    dk = d // h
    scale = 1.0 / math.sqrt(dk)

    def loss(p: Any, ids: Any, labels: Any) -> Any:
        b, t = ids.shape
        keep = jnp.tril(jnp.ones((t, t), bool))

        def heads(z: Any) -> Any:
            return z.reshape(b, t, h, dk).transpose(0, 2, 1, 3)

        x = p.embedding[ids] + p.positions[:t]
        for bp in p.blocks:
            ap, ff = bp.attention, bp.feed_forward
            q, k, v = heads(x @ ap.W_Q), heads(x @ ap.W_K), heads(x @ ap.W_V)
            s = jnp.where(keep, (q @ k.swapaxes(-1, -2)) * scale, MASKED)
            o = (jax.nn.softmax(s, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
            x = _layer_norm(x + o @ ap.W_O, bp.norm1, cfg.eps)
            hidden = jax.nn.relu(x @ ff.hidden.weight + ff.hidden.bias)
            x = _layer_norm(x + hidden @ ff.output.weight + ff.output.bias, bp.norm2, cfg.eps)
        logits = x @ p.unembedding.weight + p.unembedding.bias
        counted = labels >= 0
        logp = jax.nn.log_softmax(logits, axis=-1)
        picked = jnp.take_along_axis(logp, jnp.where(counted, labels, 0)[..., None], axis=-1)[..., 0]
        return -(picked * counted).sum() / jnp.maximum(counted.sum(), 1)

    return loss


def prepare(problem: Problem) -> PeerStep:
    """The :class:`~prelens_bench.peers.PeerStep` of ``problem`` in JAX, compiled once here."""
    from prelens_bench._problem import PeerStep

    if np.dtype(problem.case.dtype) == np.float64:
        jax.config.update("jax_enable_x64", True)
    loss = _lm_loss(problem.case.model) if isinstance(problem.case.model, LMConfig) else _mlp_loss
    lr = problem.lr
    x, y = jnp.asarray(problem.x), jnp.asarray(problem.y)
    params0 = jax.tree_util.tree_map(jnp.asarray, problem.params)

    def sgd_step(params: Any, x: Any, y: Any) -> Any:
        value, g = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda a, da: a - lr * da, params, g), value

    train_step = jax.jit(sgd_step)
    grad_fn = jax.jit(jax.grad(loss))
    state = [params0]
    jax.block_until_ready(train_step(params0, x, y))  # compile before anything is timed

    def step() -> None:
        state[0], value = train_step(state[0], x, y)
        jax.block_until_ready((state[0], value))

    def grads() -> Any:
        return jax.tree_util.tree_map(np.asarray, grad_fn(params0, x, y))

    return PeerStep(step, grads)
