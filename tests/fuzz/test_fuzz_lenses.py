"""Every lens's forward and backward pass, fed random bad input.

For each lens a good ``(p, s)`` is built (with a batch of 0, 1 or 3 rows: an
empty batch is one of the edge cases), then one part of it is corrupted:
parameters, input, output delta or residue, by wrong shapes, ranks, dtypes
(ints, bools, complex, object, strings), NaN/inf, wrong tree structures, or
values of the wrong type. The outcome must be a correct result or one of
prelens's own errors (see ``_harness.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens import (
    PreLens,
    add_l,
    assoc_l,
    backward,
    batch_n,
    branch,
    chain,
    copy_l,
    forward,
    from_tamb,
    id_pre_lens,
    nn,
    structure_mismatch,
    sym_l,
    to_tamb,
    tree_paths,
    vec_lens,
    vjp,
)

from ._bad import mutate
from ._harness import attempt, close_to, deltas_fit

Array = np.ndarray
AnyLens = PreLens[Any, Any, Any, Any, Any, Any, Any, Any]


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile (60 by default), scaled with the active profile."""
    return max(3, round(n * settings.default.max_examples / 60))


# ----------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """A lens, a maker of good ``(p, s)`` for a batch of ``b`` rows, and optionally a reference forward pass."""

    name: str
    build: Callable[[], Any]
    good: Callable[[Any, np.random.Generator, int], tuple[Any, Any]]
    ref: Callable[[Any, Any], Any] | None = None
    heavy: bool = False
    #: For lenses whose residue cannot know the input's shape (``bias`` keeps ``()``, the
    #: wiring passes deltas through): the exact ``(dp, ds)`` for a given ``da``. An accepted
    #: backward pass must equal it (otherwise its deltas must fit ``(p, s)``).
    bwd_ref: Callable[[Any], Any] | None = None
    #: For losses (a scalar output, so a scalar delta): the ``(p, s)`` a residue stands for. A
    #: corrupted residue that is still self-consistent is then judged against itself.
    residue_primal: Callable[[Any], tuple[Any, Any]] | None = None

    def __repr__(self) -> str:
        return self.name


def _init(lens: Any, rng: np.random.Generator) -> Any:
    return lens.init(rng)


def rows(*tail: int, dtype: Any = np.float64) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    """Good input: the lens's own parameters and a batch ``(b, *tail)`` of normal floats."""
    return lambda lens, rng, b: (_init(lens, rng), rng.standard_normal((b, *tail)).astype(dtype))


def ids(vocab: int, t: int) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, b: (_init(lens, rng), rng.integers(0, vocab, (b, t)))


def _sigmoid(z: Array) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-z.astype(np.float64)))).astype(z.dtype)


def _gelu(z: Array) -> Array:
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))


def _softmax(z: Array) -> Array:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _act(name: str | None) -> Callable[[Array], Array]:
    return {
        "tanh": np.tanh,
        "relu": lambda z: np.maximum(z, 0),
        "sigmoid": _sigmoid,
        "gelu": _gelu,
        None: lambda z: z,
    }[name]


def _dense_ref(act: str | None) -> Callable[[Any, Any], Any]:
    return lambda p, x: _act(act)(x @ p[0] + p[1])


def _ce_ref(y: Array, s: Array) -> Any:
    top = s.max(axis=-1, keepdims=True)
    lse = (np.log(np.exp(s - top).sum(axis=-1, keepdims=True)) + top)[..., 0]
    picked = np.take_along_axis(s, y[..., None], axis=-1)[..., 0]
    return (lse - picked).sum() / max(y.size, 1)


def _ln_ref(p: Any, x: Array) -> Array:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * p[0] + p[1]


def _pair_rows(a: tuple[int, ...], b: tuple[int, ...]) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, n: (_init(lens, rng), (rng.standard_normal((n, *a)), rng.standard_normal((n, *b))))


def _loss_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return rng.standard_normal((b, 3)), rng.standard_normal((b, 3))


def _ce_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return rng.integers(0, 4, b), rng.standard_normal((b, 4))


def _tce_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    labels = rng.integers(-1, 7, (b, 4))
    return labels, rng.standard_normal((b, 4, 7))


def _vec_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), rng.standard_normal(3)


def _faithful_batch(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), rng.standard_normal(3)


def _tamb_mlp_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return nn.init_mlp(3, [2, 1], rng), rng.standard_normal(3)


def _loss_l_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return [rng.standard_normal(2) for _ in range(b)], [rng.standard_normal(2) for _ in range(b)]


def _batch_loss_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    theta = nn.init_mlp(3, [2, 1], rng)
    return ([rng.standard_normal(1) for _ in range(2)], theta), [rng.standard_normal(3) for _ in range(2)]


def _concat_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return (), [rng.standard_normal((b, 3, 2)), rng.standard_normal((b, 3, 1))]


def _list_of(n: int, tail: tuple[int, ...]) -> Callable[[Any, np.random.Generator, int], tuple[Any, Any]]:
    return lambda lens, rng, b: (_init(lens, rng), [rng.standard_normal((b, *tail)) for _ in range(n)])


def _scalar_good(lens: Any, rng: np.random.Generator, b: int) -> tuple[Any, Any]:
    return _init(lens, rng), float(rng.standard_normal())


def _mask_ref(p: Any, s: Array) -> Array:
    hidden = nn.MASKED if s.dtype.itemsize >= 4 else np.finfo(s.dtype).min  # -1e30 is -inf in float16
    return np.where(np.tri(*s.shape[-2:], s.shape[-1] - s.shape[-2], dtype=bool), s, hidden)


def _split_ref(h: int) -> Callable[[Any, Any], Any]:
    def ref(p: Any, x: Array) -> Array:
        *lead, t, d = x.shape
        return x.reshape(*lead, t, h, d // h).swapaxes(-2, -3)

    return ref


def _merge_ref(p: Any, x: Array) -> Array:
    *lead, h, t, dk = x.shape
    return x.swapaxes(-3, -2).reshape(*lead, t, h * dk)


CASES: list[Case] = [
    # the fast layers
    Case("linear", lambda: nn.linear(3, 2), rows(3), lambda w, x: x @ w),
    Case("linear f32", lambda: nn.linear(3, 2, dtype=np.float32), rows(3, dtype=np.float32), lambda w, x: x @ w),
    Case("linear data", lambda: nn.linear(3, 2, input_delta=False), rows(3), lambda w, x: x @ w),
    Case(
        "bias", lambda: nn.bias(3), rows(3), lambda b, x: x + b, bwd_ref=lambda da: (da.reshape(-1, 3).sum(axis=0), da)
    ),
    Case("dense tanh", lambda: nn.dense(3, 2), rows(3), _dense_ref("tanh")),
    Case("dense relu f32", lambda: nn.dense(3, 2, "relu", dtype=np.float32), rows(3, dtype=np.float32)),
    Case("dense logits data", lambda: nn.dense(3, 2, None, input_delta=False), rows(3), _dense_ref(None)),
    Case("mlp", lambda: nn.mlp(3, [4, 2]), rows(3)),
    Case(
        "mlp relu f32",
        lambda: nn.mlp(3, [4, 2], "relu", last_activation=None, dtype="float32"),
        rows(3, dtype=np.float32),
    ),
    # activations and losses
    *[
        Case(a, lambda a=a: nn.ACTIVATIONS[a], rows(4), lambda p, s, a=a: _act(a)(s))
        for a in ("tanh", "relu", "sigmoid", "gelu")
    ],
    Case("softmax", lambda: nn.softmax, rows(4), lambda p, s: _softmax(s)),
    Case(
        "squared_distance",
        lambda: nn.squared_distance,
        _loss_good,
        lambda g, s: 0.5 * ((s - g) ** 2).sum(),
        residue_primal=lambda m: (m[0], m[1]),
    ),
    Case(
        "mse",
        lambda: nn.mse,
        _loss_good,
        lambda g, s: ((s - g) ** 2).sum() / max(s.size, 1),
        residue_primal=lambda m: (m[0], m[1]),
    ),
    Case(
        "softmax_cross_entropy",
        lambda: nn.softmax_cross_entropy,
        _ce_good,
        _ce_ref,
        residue_primal=lambda m: (m[1], m[0]),
    ),
    Case("token_cross_entropy", lambda: nn.token_cross_entropy(), _tce_good, residue_primal=lambda m: (m[1], m[0])),
    # embeddings and norms
    Case("token_embedding", lambda: nn.token_embedding(5, 3), ids(5, 4), lambda t, i: t[i]),
    Case("positional_embedding", lambda: nn.positional_embedding(6, 3), rows(4, 3), lambda t, x: x + t[: x.shape[-2]]),
    Case(
        "sinusoidal_encoding",
        lambda: nn.sinusoidal_encoding(4),
        rows(3, 4),
        lambda p, x: x + nn.sinusoidal_table(x.shape[-2], 4, x.dtype),
    ),
    Case("layer_norm", lambda: nn.layer_norm(4), rows(4), _ln_ref),
    Case("layer_norm f32", lambda: nn.layer_norm(4, dtype=np.float32), rows(4, dtype=np.float32)),
    # attention's pieces
    Case(
        "attention_scores",
        lambda: nn.attention_scores(2),
        _pair_rows((3, 2), (4, 2)),
        lambda p, qk: qk[0] @ qk[1].swapaxes(-1, -2) / math.sqrt(2),
    ),
    Case(
        "causal_mask",
        nn.causal_mask,
        rows(3, 3),
        _mask_ref,
        bwd_ref=lambda da: ((), np.where(np.tri(3, 3, dtype=bool), da, 0.0).astype(da.dtype)),
    ),
    Case("weighted_sum", nn.weighted_sum, _pair_rows((3, 4), (4, 2)), lambda p, av: av[0] @ av[1]),
    Case("split_heads", lambda: nn.split_heads(2), rows(3, 4), _split_ref(2)),
    Case("merge_heads", lambda: nn.merge_heads(2), rows(2, 3, 2), _merge_ref),
    Case("concat_heads", lambda: nn.concat_heads(2), _concat_good, lambda p, xs: np.concatenate(xs, axis=-1)),
    # attention and transformers
    Case("attention_head", lambda: nn.attention_head(4, 2, causal=True), rows(3, 4), heavy=True),
    Case("multi_head_attention", lambda: nn.multi_head_attention(4, 2, causal=True), rows(3, 4), heavy=True),
    Case("multi_head_attention_faithful", lambda: nn.multi_head_attention_faithful(4, 2), rows(3, 4), heavy=True),
    Case("cross_attention", lambda: nn.cross_attention(4, 2), _pair_rows((3, 4), (5, 4)), heavy=True),
    Case("residual", lambda: nn.residual(nn.dense(3, 3)), rows(3), lambda p, x: x + np.tanh(x @ p[0] + p[1])),
    Case("feed_forward", lambda: nn.feed_forward(4, 8), rows(3, 4)),
    Case("feed_forward_composed", lambda: nn.feed_forward_composed(4, 8), rows(3, 4)),
    Case("encoder_block", lambda: nn.encoder_block(4, 2, 8, norm="pre"), rows(3, 4), heavy=True),
    Case("decoder_block", lambda: nn.decoder_block(4, 2, 8), _pair_rows((3, 4), (5, 4)), heavy=True),
    Case("decoder_lm", lambda: nn.decoder_lm(7, 4, 2, 8, 1, 6), ids(7, 4), heavy=True),
    Case(
        "encoder_decoder",
        lambda: nn.encoder_decoder(5, 7, 4, 2, 8, 1, 6),
        lambda lens, rng, b: (lens.init(rng), (rng.integers(0, 5, (b, 4)), rng.integers(0, 7, (b, 3)))),
        heavy=True,
    ),
    # the faithful network
    Case("linear_l", lambda: nn.linear_l(3), _vec_good, lambda p, s: float(p @ s)),
    Case("bias_l", lambda: nn.bias_l, _scalar_good, lambda p, s: float(p) + float(s)),
    Case("activ_l", lambda: nn.activ_l, _scalar_good, lambda p, s: math.tanh(s)),
    Case(
        "neuron_l",
        lambda: nn.neuron_l(3),
        _vec_good,
        lambda p, s: math.tanh(float(p.bias) + float(np.asarray(p.weight, float) @ np.asarray(s, float))),
    ),
    Case("layer_l", lambda: nn.layer_l(3, 2), _vec_good),
    Case("make_mlp_l", lambda: nn.make_mlp_l(3, [2, 1]), _faithful_batch),
    Case("make_mlp (TriLens)", lambda: nn.make_mlp(3, [2, 1]), _tamb_mlp_good),
    Case(
        "loss_l",
        lambda: nn.loss_l,
        _loss_l_good,
        lambda g, s: 0.5 * sum(float(((x - y) ** 2).sum()) for x, y in zip(s, g)),
        residue_primal=lambda m: (m[0], m[1]),
    ),
    Case("batch_loss_l", lambda: nn.batch_loss_l(nn.make_mlp(3, [2, 1]), 2), _batch_loss_good),
    # the core combinators
    Case("id_pre_lens", lambda: id_pre_lens, rows(3), lambda p, s: s, bwd_ref=lambda da: ((), da)),
    Case("copy_l", lambda: copy_l, rows(3), bwd_ref=lambda da: ((), da[0] + da[1])),
    Case("add_l", lambda: add_l, _pair_rows((3,), (3,)), lambda p, s: s[0] + s[1], bwd_ref=lambda da: ((), (da, da))),
    Case("sym_l", lambda: sym_l, _pair_rows((3,), (2,)), bwd_ref=lambda da: ((), (da[1], da[0]))),
    Case(
        "assoc_l",
        lambda: assoc_l,
        lambda lens, rng, b: ((), ((rng.standard_normal((b, 2)), rng.standard_normal(b)), rng.standard_normal(3))),
        bwd_ref=lambda da: ((), ((da[0], da[1][0]), da[1][1])),
    ),
    Case("branch", lambda: branch(2), rows(3), bwd_ref=lambda da: ((), da[0] + da[1])),
    Case("vec_lens", lambda: vec_lens(2, nn.dense(3, 2)), _list_of(2, (3,))),
    Case(
        "batch_n",
        lambda: batch_n(2, nn.dense(3, 2)),
        lambda lens, rng, b: (lens.init(rng), [rng.standard_normal((b, 3)) for _ in range(2)]),
    ),
    Case("chain", lambda: chain(nn.dense(3, 4), nn.tanh, nn.dense(4, 2, None)), rows(3)),
    Case(">>", lambda: nn.dense(3, 2) >> nn.sigmoid, rows(3)),
    Case("@", lambda: nn.dense(3, 2) @ nn.relu, _pair_rows((3,), (2,))),
    Case(
        "from_tamb(to_tamb)",
        lambda: from_tamb(to_tamb(nn.dense(3, 2))),
        lambda lens, rng, b: (nn.dense(3, 2).init(rng), rng.standard_normal((b, 3))),
        _dense_ref("tanh"),
    ),
]


def _runner(lens: Any) -> Any:
    """The pre-lens to call ``fwd``/``bwd`` on (a TriLens runs through ``from_tamb``)."""
    return from_tamb(lens) if not isinstance(lens, PreLens) else lens


def _good_da(a: Any) -> Any:
    """A good output delta for the output ``a``: ones shaped like every leaf; ``1.0`` for a scalar."""
    if isinstance(a, np.ndarray):
        return np.ones_like(a)
    if isinstance(a, (float, np.floating)):
        return 1.0
    if isinstance(a, tuple):
        return tuple(_good_da(x) for x in a)
    if isinstance(a, list):
        return [_good_da(x) for x in a]
    return a


def _params_for(case: Case) -> list[Any]:
    return [pytest.param(c, id=c.name, marks=[]) for c in CASES if c.heavy == (case is not None)]


LIGHT = [pytest.param(c, id=c.name) for c in CASES if not c.heavy]
HEAVY = [pytest.param(c, id=c.name) for c in CASES if c.heavy]


def _forward_case(case: Case, data: st.DataObject) -> None:
    lens = case.build()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    b = data.draw(st.sampled_from([0, 1, 3]), label="batch")
    p, s = case.good(lens, rng, b)
    target = data.draw(st.sampled_from(["p", "s"] if not _is_unit(p) else ["s", "s", "p"]), label="target")
    if target == "p":
        p, how = mutate(data, p, "p")
    else:
        s, how = mutate(data, s, "s")
    how = f"{case.name}: {how} (batch {b})"
    via = data.draw(st.sampled_from(["fwd", "forward", "vjp"]), label="via")
    run = _runner(lens)

    def thunk() -> Any:
        if via == "fwd":
            return run.fwd(p, s)[1]
        if via == "forward":
            return forward(lens, p, s)
        return vjp(lens, p, s)[0]

    check = None
    if case.ref is not None:
        ref = case.ref

        def check(a: Any) -> None:
            try:
                want = ref(p, s)
            except Exception as exc:  # the lens took what its own mathematics cannot
                raise AssertionError(f"accepted, but the reference fails: {type(exc).__name__}: {exc}") from exc
            close_to(want, rtol=1e-5, atol=1e-6)(a)

    attempt(f"{how}, via {via}", thunk, inputs=(p, s), check=check)


def _backward_case(case: Case, data: st.DataObject) -> None:
    lens = case.build()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    b = data.draw(st.sampled_from([0, 1, 3]), label="batch")
    p, s = case.good(lens, rng, b)
    run = _runner(lens)
    m, a = run.fwd(p, s)
    da = _good_da(a)
    target = data.draw(st.sampled_from(["da", "da", "m"]), label="target")
    if target == "da":
        da, how = mutate(data, da, "da")
        dm = m
        primal = None
    else:
        dm, how, primal = _bad_residue(data, case, lens, rng, b, m)
    how = f"{case.name}: {how} (batch {b})"
    check = deltas_fit(p, s) if case.bwd_ref is None else _equals_bwd_ref(case.bwd_ref, da)
    if primal is not None and case.bwd_ref is None:  # a genuine residue of another batch
        check = _either(deltas_fit(p, s), deltas_fit(*primal))
    elif target == "m" and case.residue_primal is not None:  # a loss: the residue is all it knows
        check = _residue_fit(case.residue_primal, dm)
    attempt(how, lambda: run.bwd(dm, da), inputs=(dm, da), check=check)
    # the same through the trace (which checks a lens's deltas the first time it runs)
    if target == "da":
        attempt(f"{how}, via vjp", lambda: vjp(lens, p, s)[1](da), inputs=(p, s, da), check=check)
        attempt(f"{how}, via backward", lambda: backward(lens, p, s, da), inputs=(p, s, da), check=check)


def _same_leaf(x: Any, y: Any) -> bool:
    """Equal leaves: numbers within round-off (NaN equal to NaN), anything else by identity or ``==``."""
    if x is y:
        return True
    ax, ay = np.asarray(x), np.asarray(y)
    if ax.dtype.kind in "biufc" and ay.dtype.kind in "biufc":
        return ax.shape == ay.shape and bool(np.allclose(ax, ay, rtol=1e-12, equal_nan=True))
    return ax.shape == ay.shape and bool(np.all(ax == ay))


def _residue_fit(primal_of: Callable[[Any], tuple[Any, Any]], dm: Any) -> Callable[[Any], None]:
    def check(out: Any) -> None:
        try:
            p, s = primal_of(dm)
        except Exception as exc:
            raise AssertionError(f"accepted a residue that is not one: {type(exc).__name__}: {exc}") from exc
        deltas_fit(p, s)(out)

    return check


def _either(one: Callable[[Any], None], other: Callable[[Any], None]) -> Callable[[Any], None]:
    """Deltas that fit the residue's batch or the delta's batch (a residue may not record the batch)."""

    def check(out: Any) -> None:
        try:
            one(out)
        except AssertionError:
            other(out)

    return check


def _equals_bwd_ref(bwd_ref: Callable[[Any], Any], da: Any) -> Callable[[Any], None]:
    def check(out: Any) -> None:
        try:
            want = bwd_ref(da)
        except Exception as exc:
            raise AssertionError(f"accepted, but the reference fails: {type(exc).__name__}: {exc}") from exc
        found = structure_mismatch(out, want, shapes=True)
        assert found is None, f"(dp, ds) differs from the reference: {found}"
        for (path, x), (_, y) in zip(tree_paths(out), tree_paths(want)):
            assert _same_leaf(x, y), f"(dp, ds) differs from the reference at {path}"

    return check


def _bad_residue(
    data: st.DataObject, case: Case, lens: Any, rng: np.random.Generator, b: int, m: Any
) -> tuple[Any, str, tuple[Any, Any] | None]:
    """A residue that ``fwd`` did not make (corrupted), or one of a batch of another size (with its ``(p, s)``)."""
    if data.draw(st.booleans(), label="other batch"):
        p2, s2 = case.good(lens, rng, b + 2)
        return _runner(lens).fwd(p2, s2)[0], f"residue of a batch of {b + 2}", (p2, s2)
    bad, how = mutate(data, m, "m")
    return bad, how, None


def _is_unit(p: Any) -> bool:
    return isinstance(p, tuple) and len(p) == 0


@pytest.mark.parametrize("case", LIGHT)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_forward_of_bad_input(case: Case, data: st.DataObject) -> None:
    _forward_case(case, data)


@pytest.mark.parametrize("case", LIGHT)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_backward_of_bad_input(case: Case, data: st.DataObject) -> None:
    _backward_case(case, data)


@pytest.mark.parametrize("case", HEAVY)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_forward_of_bad_input_heavy(case: Case, data: st.DataObject) -> None:
    _forward_case(case, data)


@pytest.mark.parametrize("case", HEAVY)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_backward_of_bad_input_heavy(case: Case, data: st.DataObject) -> None:
    _backward_case(case, data)
