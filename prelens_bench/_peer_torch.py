"""The peers' PyTorch side: the benchmark's models in PyTorch eager, as a PyTorch user writes them.

``torch.nn`` modules (``Linear``, ``Tanh``, ``LayerNorm``, ``Embedding``), the
library's fused causal attention (``scaled_dot_product_attention``), ``loss.backward()``
and ``torch.optim.SGD``. The weights are copied in from prelens's layout
(``nn.Linear`` stores ``Wᵀ``), the gradients copied back out into it.

Imported only by :func:`prelens_bench.peers.TORCH_EAGER` (``torch`` is the optional extra ``peers``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from prelens import errors as E
from prelens.nn import DenseParams
from prelens.nn._attention import AttentionParams
from prelens.nn._norm import LayerNormParams
from prelens.nn._transformer import EncoderBlockParams, FeedForwardParams, LMParams
from prelens_bench.lm import LMConfig

if TYPE_CHECKING:
    from prelens_bench._problem import PeerStep, Problem

try:
    import torch
    import torch.nn.functional as F
except ImportError as exc:  # pragma: no cover - only without the extra
    raise E.missing_extra("prelens bench --peers", "torch", "peers") from exc

__all__ = ["prepare"]


def _t(a: Any) -> Any:
    """A tensor that owns a copy of ``a``."""
    return torch.from_numpy(np.ascontiguousarray(a).copy())


def _linear(weight: Any, bias: Any | None, dt: Any) -> Any:
    lin = torch.nn.Linear(weight.shape[0], weight.shape[1], bias=bias is not None, dtype=dt)
    with torch.no_grad():
        lin.weight.copy_(_t(weight.T))
        if bias is not None:
            lin.bias.copy_(_t(bias))
    return lin


def _norm(p: LayerNormParams, eps: float, dt: Any) -> Any:
    ln = torch.nn.LayerNorm(p.gain.shape[0], eps=eps, dtype=dt)
    with torch.no_grad():
        ln.weight.copy_(_t(p.gain))
        ln.bias.copy_(_t(p.bias))
    return ln


def _w(lin: Any) -> Any:
    return lin.weight.grad.numpy().T.copy()


def _dense_grad(lin: Any) -> DenseParams:
    return DenseParams(_w(lin), lin.bias.grad.numpy().copy())


def _norm_grad(ln: Any) -> LayerNormParams:
    return LayerNormParams(ln.weight.grad.numpy().copy(), ln.bias.grad.numpy().copy())


def prepare(problem: Problem, threads: int) -> PeerStep:
    """The :class:`~prelens_bench.peers.PeerStep` of ``problem`` in PyTorch eager, on ``threads`` threads."""
    from prelens_bench._problem import PeerStep

    torch.set_num_threads(max(1, threads))
    dt = torch.float64 if np.dtype(problem.case.dtype) == np.float64 else torch.float32
    if isinstance(problem.case.model, LMConfig):
        loss_of, modules, grads_of = _lm(problem, problem.case.model, dt)
    else:
        loss_of, modules, grads_of = _mlp(problem, dt)
    opt = torch.optim.SGD(modules.parameters(), lr=problem.lr)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()

    def grads() -> Any:
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        return grads_of()

    return PeerStep(step, grads)


def _mlp(problem: Any, dt: Any) -> tuple[Callable[[], Any], Any, Callable[[], Any]]:
    layers = [_linear(p.weight, p.bias, dt) for p in problem.params]
    net = torch.nn.Sequential(*(m for lin in layers for m in (lin, torch.nn.Tanh())))
    x, y = _t(problem.x), _t(problem.y)

    def loss() -> Any:
        return F.mse_loss(net(x), y)

    return loss, net, lambda: [_dense_grad(lin) for lin in layers]


def _lm(problem: Any, cfg: LMConfig, dt: Any) -> tuple[Callable[[], Any], Any, Callable[[], Any]]:
    p: LMParams = problem.params
    d, h = cfg.d_model, cfg.n_heads
    emb = torch.nn.Embedding(cfg.vocab, d, dtype=dt)
    with torch.no_grad():
        emb.weight.copy_(_t(p.embedding))
    pos = torch.nn.Parameter(_t(p.positions))
    blocks = []
    for bp in p.blocks:
        ap, ff = bp.attention, bp.feed_forward
        blocks.append(
            torch.nn.ModuleDict(
                {
                    "q": _linear(ap.W_Q, None, dt),
                    "k": _linear(ap.W_K, None, dt),
                    "v": _linear(ap.W_V, None, dt),
                    "o": _linear(ap.W_O, None, dt),
                    "ln1": _norm(bp.norm1, cfg.eps, dt),
                    "ff1": _linear(ff.hidden.weight, ff.hidden.bias, dt),
                    "ff2": _linear(ff.output.weight, ff.output.bias, dt),
                    "ln2": _norm(bp.norm2, cfg.eps, dt),
                }
            )
        )
    out = _linear(p.unembedding.weight, p.unembedding.bias, dt)
    modules = torch.nn.ModuleList([emb, *blocks, out])
    modules.register_parameter("positions", pos)
    ids, labels = torch.from_numpy(problem.x), torch.from_numpy(problem.y)
    b, t = problem.x.shape

    def heads(z: Any) -> Any:
        return z.view(b, t, h, d // h).transpose(1, 2)

    def loss() -> Any:
        x = emb(ids) + pos[:t]
        for blk in blocks:
            q, k, v = heads(blk["q"](x)), heads(blk["k"](x)), heads(blk["v"](x))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = blk["ln1"](x + blk["o"](a.transpose(1, 2).reshape(b, t, d)))
            x = blk["ln2"](x + blk["ff2"](F.relu(blk["ff1"](x))))
        logits = out(x)
        return F.cross_entropy(logits.reshape(b * t, -1), labels.reshape(-1), ignore_index=-1)

    def grads() -> LMParams:
        block_grads = [
            EncoderBlockParams(
                AttentionParams(_w(blk["q"]), _w(blk["k"]), _w(blk["v"]), _w(blk["o"])),
                _norm_grad(blk["ln1"]),
                FeedForwardParams(_dense_grad(blk["ff1"]), _dense_grad(blk["ff2"])),
                _norm_grad(blk["ln2"]),
            )
            for blk in blocks
        ]
        return LMParams(emb.weight.grad.numpy().copy(), pos.grad.numpy().copy(), block_grads, (), _dense_grad(out))

    return loss, modules, grads
