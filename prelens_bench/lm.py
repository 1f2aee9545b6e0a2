"""Benchmark: a training step of the lens-built language model against the same model in plain numpy.

The model is :func:`prelens.nn.decoder_lm` (post-LN, learned positions) with
:func:`prelens.nn.token_cross_entropy`. :class:`HandLM` is the same network
written by hand, one numpy function for the forward pass and one for the
backward pass, reading the same :class:`~prelens.nn.LMParams`. Both start
from the same weights; before any timing the benchmark checks that the two
give the same loss and the same gradient for every parameter. Then the two
steps (forward and backward: the gradient, which is what the lenses compute;
the optimiser update is the same code for both and is left out) run
interleaved, and the table reports median times, their ratio, and the minor
page faults per step (``resource.getrusage``: a fresh large temporary costs
page faults).

>>> print(run_lm_benchmark(quick=True, repeats=2, dtypes=("float64",)))  # doctest: +ELLIPSIS
decoder-only LM training step (forward + backward), vocab 64, ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens.core._trace import vjp
from prelens.core._tree import tree_first_difference, tree_leaves, tree_paths
from prelens.errors import law_violation
from prelens.nn._attention import AttentionParams
from prelens.nn._dot_attention import MASKED
from prelens.nn._fastcheck import Array
from prelens.nn._linear import DenseParams
from prelens.nn._losses import token_cross_entropy
from prelens.nn._norm import LayerNormParams
from prelens.nn._transformer import EncoderBlockParams, FeedForwardParams, LMParams, decoder_lm
from prelens_bench._timing import time_interleaved

__all__ = ["HandLM", "LMConfig", "lm_benchmark_rows", "run_lm_benchmark"]


@dataclass(frozen=True)
class LMConfig:
    """The benchmark's model and batch (the defaults are the issue's sizes).

    >>> LMConfig(batch=2)
    LMConfig(vocab=64, seq_len=32, d_model=64, n_heads=4, d_ff=256, n_layers=2, batch=2, eps=1e-05)
    """

    vocab: int = 64
    seq_len: int = 32
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_layers: int = 2
    batch: int = 16
    eps: float = 1e-5


# ---------------------------------------------------------------- by hand


class HandLM:
    """The decoder-only LM (post-LN, learned positions, causal) written directly in numpy.

    ``loss_and_grads(params, ids, labels) -> (loss, grads)`` with ``params``
    and ``grads`` both :class:`~prelens.nn.LMParams`; labels ``-1`` are not
    counted. Matmuls run on ``(B·T, d)`` matrices; temporaries are updated in
    place where that saves an allocation.

    >>> from prelens.nn import decoder_lm
    >>> cfg = LMConfig(vocab=5, seq_len=4, d_model=4, n_heads=2, d_ff=8, n_layers=1, batch=2)
    >>> params = decoder_lm(5, 4, 2, 8, 1, 4).init(0)
    >>> ids, labels = np.array([[0, 1, 2, 3], [4, 3, 2, 1]]), np.array([[1, 2, 3, 4], [-1, 2, 1, 0]])
    >>> loss, grads = HandLM(cfg).loss_and_grads(params, ids, labels)
    >>> round(float(loss), 4), type(grads).__name__, grads.embedding.shape
    (2.2083, 'LMParams', (5, 4))
    """

    def __init__(self, cfg: LMConfig) -> None:
        self.cfg = cfg
        t = cfg.seq_len
        self.keep = np.tri(t, t, 0, dtype=bool)

    def loss_and_grads(self, p: LMParams, ids: Array, labels: Array) -> tuple[Any, LMParams]:
        """The mean cross-entropy over counted positions, and its gradient."""
        cfg = self.cfg
        b, t = ids.shape
        d, h = cfg.d_model, cfg.n_heads
        dk = d // h
        scale = 1.0 / math.sqrt(dk)
        n = b * t
        dt = p.embedding.dtype

        # ---- forward
        x = p.embedding[ids.reshape(-1)]
        x3 = x.reshape(b, t, d)
        x3 += p.positions[:t]
        caches = []
        for bp in p.blocks:
            ap = bp.attention
            q = _heads(x @ ap.W_Q, b, t, h, dk)
            k = _heads(x @ ap.W_K, b, t, h, dk)
            v = _heads(x @ ap.W_V, b, t, h, dk)
            s = q @ k.swapaxes(-1, -2)
            s *= scale
            s = np.where(self.keep, s, MASKED)
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            a = s
            o = _unheads(a @ v, b, t, d)
            y = o @ ap.W_O
            y += x
            x1, xh1, r1 = _ln(y, bp.norm1, cfg.eps)
            ff = bp.feed_forward
            hid = x1 @ ff.hidden.weight
            hid += ff.hidden.bias
            np.maximum(hid, 0, out=hid)  # ReLU in place; hid > 0 is its derivative's mask
            y2 = hid @ ff.output.weight
            y2 += ff.output.bias
            y2 += x1
            x2, xh2, r2 = _ln(y2, bp.norm2, cfg.eps)
            caches.append((x, q, k, v, a, o, x1, xh1, r1, hid, xh2, r2))
            x = x2
        logits = x @ p.unembedding.weight
        logits += p.unembedding.bias
        lab = labels.reshape(-1)
        counted = lab >= 0
        count = max(int(counted.sum()), 1)
        logits -= logits.max(axis=-1, keepdims=True)
        picked = logits[np.arange(n), np.where(counted, lab, 0)]
        np.exp(logits, out=logits)
        total = logits.sum(axis=-1)
        loss = ((np.log(total) - picked) * counted).sum() / count
        probs = logits
        probs /= total[:, None]

        # ---- backward
        dlogits = probs
        rows = np.flatnonzero(counted)
        dlogits[rows, lab[rows]] -= 1
        dlogits *= (counted * (1.0 / count)).astype(dt)[:, None]
        d_unemb = DenseParams(x.T @ dlogits, dlogits.sum(axis=0))
        dx = dlogits @ p.unembedding.weight.T
        d_blocks = []
        for bp, cache in zip(reversed(p.blocks), reversed(caches)):
            x0, q, k, v, a, o, x1, xh1, r1, hid, xh2, r2 = cache
            ap, ff = bp.attention, bp.feed_forward
            dy2, d_ln2 = _ln_back(dx, xh2, r2, bp.norm2.gain)
            d_out = DenseParams(hid.T @ dy2, dy2.sum(axis=0))
            dhid = dy2 @ ff.output.weight.T
            dhid *= hid > 0
            d_hidden = DenseParams(x1.T @ dhid, dhid.sum(axis=0))
            dx1 = dhid @ ff.hidden.weight.T
            dx1 += dy2
            dy, d_ln1 = _ln_back(dx1, xh1, r1, bp.norm1.gain)
            dwo = o.T @ dy
            do = _heads(dy @ ap.W_O.T, b, t, h, dk)
            da = do @ v.swapaxes(-1, -2)
            dv = a.swapaxes(-1, -2) @ do
            ds = da
            ds -= (da * a).sum(axis=-1, keepdims=True)
            ds *= a
            ds *= scale
            dq = _unheads(ds @ k, b, t, d)
            dkk = _unheads(ds.swapaxes(-1, -2) @ q, b, t, d)
            dvv = _unheads(dv, b, t, d)
            d_attn = AttentionParams(x0.T @ dq, x0.T @ dkk, x0.T @ dvv, dwo)
            dx = dq @ ap.W_Q.T
            dx += dkk @ ap.W_K.T
            dx += dvv @ ap.W_V.T
            dx += dy
            d_blocks.append(EncoderBlockParams(d_attn, d_ln1, FeedForwardParams(d_hidden, d_out), d_ln2))
        d_blocks.reverse()
        dx3 = dx.reshape(b, t, d)
        d_pos = np.zeros_like(p.positions)
        np.sum(dx3, axis=0, out=d_pos[:t])
        d_emb = np.zeros_like(p.embedding)
        flat = (ids.reshape(-1, 1) * d + np.arange(d)).reshape(-1)  # the lens's scatter-add kernel
        np.add.at(d_emb.reshape(-1), flat, dx.reshape(-1))
        return loss, LMParams(d_emb, d_pos, d_blocks, (), d_unemb)


def _heads(x: Array, b: int, t: int, h: int, dk: int) -> Array:
    """``(B·T, h·d_k) -> (B, h, T, d_k)``, contiguous."""
    return np.ascontiguousarray(x.reshape(b, t, h, dk).transpose(0, 2, 1, 3))


def _unheads(x: Array, b: int, t: int, d: int) -> Array:
    """``(B, h, T, d_k) -> (B·T, h·d_k)``."""
    return x.transpose(0, 2, 1, 3).reshape(b * t, d)


def _ln(y: Array, p: LayerNormParams, eps: float) -> tuple[Array, Array, Array]:
    """Layer norm of ``y (N, d)``, in place on ``y``: returns ``(out, x̂, 1/σ)``."""
    inv_n = 1.0 / y.shape[-1]
    mean = np.add.reduce(y, axis=-1, keepdims=True)
    mean *= inv_n
    y -= mean
    r = np.einsum("ij,ij->i", y, y)[:, None]
    r *= inv_n
    r += eps
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    y *= r
    out = y * p.gain
    out += p.bias
    return out, y, r


def _ln_back(dout: Array, xh: Array, r: Array, gain: Array) -> tuple[Array, LayerNormParams]:
    d_gain = np.einsum("ij,ij->j", dout, xh)
    d_bias = dout.sum(axis=0)
    inv_n = 1.0 / dout.shape[-1]
    g = dout * gain
    mg = np.add.reduce(g, axis=-1, keepdims=True)
    mg *= inv_n
    mgx = np.einsum("ij,ij->i", g, xh)[:, None]
    mgx *= inv_n
    g -= mg
    g -= xh * mgx
    g *= r
    return g, LayerNormParams(d_gain, d_bias)


# -------------------------------------------------------------- the bench


def _lens_step(cfg: LMConfig, dtype: npt.DTypeLike) -> tuple[Any, Callable[[Any, Array, Array], Any]]:
    lm = decoder_lm(cfg.vocab, cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_layers, cfg.seq_len, eps=cfg.eps, dtype=dtype)
    model = lm >> token_cross_entropy()

    def step(params: LMParams, ids: Array, labels: Array) -> tuple[Any, LMParams]:
        loss, pullback = vjp(model, (labels, params), ids)
        (_, grads), _ = pullback(1.0)
        return loss, grads

    return lm, step


def lm_benchmark_rows(
    cfg: LMConfig = LMConfig(), *, repeats: int = 30, dtypes: Sequence[str] = ("float64", "float32"), seed: int = 0
) -> list[dict[str, Any]]:
    """One row per dtype: median times (seconds), their ratio, median minor page faults per step.

    Raises :class:`~prelens.LawError` if the two implementations disagree
    (loss or any gradient leaf) before timing.

    >>> cfg = LMConfig(vocab=5, seq_len=4, d_model=4, n_heads=2, d_ff=8, n_layers=1, batch=2)
    >>> (row,) = lm_benchmark_rows(cfg, repeats=1, dtypes=("float64",))
    >>> sorted(row), row["max_grad_diff"] < 1e-12
    (['dtype', 'hand_faults', 'hand_s', 'lens_faults', 'lens_s', 'max_grad_diff', 'ratio'], True)
    """
    rows = []
    for dtype in dtypes:
        dt = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        lm, lens_step = _lens_step(cfg, dt)
        params = lm.init(rng)
        hand = HandLM(cfg)
        ids = rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq_len))
        labels = rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq_len))
        labels[:, : cfg.seq_len // 4] = -1  # a prompt that does not count
        loss_l, grads_l = lens_step(params, ids, labels)
        loss_h, grads_h = hand.loss_and_grads(params, ids, labels)
        tol = 1e-9 if dt == np.float64 else 2e-4
        law, where = "hand-written numpy = lens", f"the LM's (loss, gradients) in {dt}"
        found = tree_first_difference((loss_l, grads_l), (loss_h, grads_h), rtol=tol, atol=tol * 1e-2)
        if found is not None:
            raise law_violation(law, where, *found)
        for path, leaf in tree_paths((loss_l, grads_l, loss_h, grads_h)):
            if np.asarray(leaf).dtype != dt:
                raise law_violation(law, f"{where}: dtypes", path, dt, np.asarray(leaf).dtype)
        fns: dict[str, Callable[[], Any]] = {
            "lens": lambda: lens_step(params, ids, labels),
            "hand": lambda: hand.loss_and_grads(params, ids, labels),
        }
        for fn in fns.values():  # warm up
            fn()
            fn()
        timed = time_interleaved(fns, repeats, inner=1)
        (lens_t, lens_faults), (hand_t, hand_faults) = timed["lens"], timed["hand"]
        rows.append(
            {
                "dtype": str(dt),
                "lens_s": lens_t,
                "hand_s": hand_t,
                "ratio": lens_t / hand_t,
                "lens_faults": round(lens_faults),
                "hand_faults": round(hand_faults),
                "max_grad_diff": _max_diff(grads_l, grads_h),
            }
        )
    return rows


def _leaves(tree: Any) -> list[Array]:
    return [np.asarray(x) for x in tree_leaves(tree)]


def _max_diff(a: Any, b: Any) -> float:
    return max(float(np.max(np.abs(x - y))) for x, y in zip(_leaves(a), _leaves(b)))


def run_lm_benchmark(
    quick: bool = False,
    *,
    repeats: int | None = None,
    dtypes: Sequence[str] = ("float64", "float32"),
    seed: int = 0,
) -> str:
    """Run :func:`lm_benchmark_rows` and format the table (``quick``: a few repeats only).

    >>> print(run_lm_benchmark(quick=True, dtypes=()))  # no dtype: the table's head only, nothing timed
    decoder-only LM training step (forward + backward), vocab 64, sequence 32, d_model 64, 4 heads,
    FFN 256, 2 blocks, batch 16; medians of 5 interleaved runs; gradients checked equal first
    dtype      lens ms   hand ms  ratio  lens faults  hand faults  max |Δgrad|
    """
    cfg = LMConfig()
    n = repeats if repeats is not None else (5 if quick else 40)
    rows = lm_benchmark_rows(cfg, repeats=n, dtypes=dtypes, seed=seed)
    head = (
        f"decoder-only LM training step (forward + backward), vocab {cfg.vocab}, sequence {cfg.seq_len}, "
        f"d_model {cfg.d_model}, {cfg.n_heads} heads, FFN {cfg.d_ff}, {cfg.n_layers} blocks, "
        f"batch {cfg.batch}; medians of {n} interleaved runs; gradients checked equal first"
    )
    lines = [
        head,
        f"{'dtype':<8} {'lens ms':>9} {'hand ms':>9} {'ratio':>6} {'lens faults':>12} {'hand faults':>12}"
        f" {'max |Δgrad|':>12}",
    ]
    for r in rows:
        lines.append(
            f"{r['dtype']:<8} {r['lens_s'] * 1e3:>9.2f} {r['hand_s'] * 1e3:>9.2f} {r['ratio']:>6.2f}"
            f" {r['lens_faults']:>12d} {r['hand_faults']:>12d} {r['max_grad_diff']:>12.1e}"
        )
    return "\n".join(lines)
