"""Time the MNIST-1D CNN's training step: prelens on numpy vs PyTorch eager, prelens on JAX vs hand-written JAX.

The model is the paper's CNN (Greydanus & Kobak): three ``conv1d`` (1→25 kernel 5 stride 2
padding 1, 25→25 kernel 3 stride 2 padding 1, twice), ReLU after each, flatten, linear
125→10, softmax cross-entropy; batch 100 of inputs ``(100, 40, 1)``; Adam 1e-2. Every side
starts from the same weights, and the gradients are checked equal (1e-12, float64) before any
timing. Steps are interleaved (one of each side per round) and the medians reported, so load
from other processes hits every side alike.

    python tools/bench_conv.py                 # numpy vs torch, jax vs hand-written jax
    python tools/bench_conv.py --rounds 400 --threads 1 --dtype float32

Run it on a quiet machine for the numbers that count. Targets (issue 24): numpy at most
1.5x PyTorch eager, JAX at most 1.15x hand-written JAX.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

if __name__ == "__main__":  # thread counts must be set before numpy, torch and jax load their libraries
    _threads = next((a.split("=")[1] for a in sys.argv if a.startswith("--threads=")), None)
    if _threads is None and "--threads" in sys.argv:
        _threads = sys.argv[sys.argv.index("--threads") + 1]
    if _threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = _threads
        os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from prelens import chain
from prelens.nn import ConvParams, DenseParams, conv1d, dense, flatten, relu, softmax_cross_entropy

LAYERS = [(1, 25, 5), (25, 25, 3), (25, 25, 3)]  # (c_in, c_out, kernel), all stride 2 padding 1


def prelens_cnn(dtype: Any = np.float64) -> Any:
    """The paper's CNN as prelens lenses (channels last: input ``(N, 40, 1)``)."""
    parts: list[Any] = []
    for c_in, c_out, k in LAYERS:
        parts += [conv1d(c_in, c_out, k, stride=2, padding=1, dtype=dtype), relu]
    return chain(*parts, flatten(), dense(125, 10, None, dtype=dtype))


def torch_cnn() -> Any:
    import torch

    layers: list[Any] = []
    for c_in, c_out, k in LAYERS:
        layers += [torch.nn.Conv1d(c_in, c_out, k, stride=2, padding=1), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.Linear(125, 10))


def params_from_torch(net: Any, dtype: Any) -> list[Any]:
    """prelens parameters equal to the torch network's (weights permuted to channels last)."""
    params: list[Any] = []
    convs = [m for m in net if m.__class__.__name__ == "Conv1d"]
    for conv in convs:
        w = conv.weight.detach().double().numpy().transpose(2, 1, 0)
        params += [ConvParams(w.astype(dtype), conv.bias.detach().double().numpy().astype(dtype)), ()]
    lin = net[-1]
    # torch flattens (channel, position), prelens (position, channel): permute the rows
    w = lin.weight.detach().double().numpy().reshape(10, 25, 5).transpose(2, 1, 0).reshape(125, 10)
    params += [(), DenseParams(w.astype(dtype), lin.bias.detach().double().numpy().astype(dtype))]
    return params


def grads_to_list(grads: list[Any]) -> list[np.ndarray]:
    return [np.asarray(a) for p in grads if p != () for a in p]


def torch_grads_to_prelens(net: Any) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for m in net:
        if m.__class__.__name__ == "Conv1d":
            out += [m.weight.grad.double().numpy().transpose(2, 1, 0), m.bias.grad.double().numpy()]
    lin = net[-1]
    out += [lin.weight.grad.double().numpy().reshape(10, 25, 5).transpose(2, 1, 0).reshape(125, 10)]
    out += [lin.bias.grad.double().numpy()]
    return out


@dataclass
class CnnPair:
    """The same CNN in prelens and in PyTorch, one batch, ready to step."""

    model: Any
    params: list[Any]
    net: Any
    xs: np.ndarray  # (N, 40, 1) channels last
    labels: np.ndarray

    def gradients(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        import torch

        from prelens.train import value_and_grad

        _, grads = value_and_grad(self.model, softmax_cross_entropy, self.params, (self.xs, self.labels))
        self.net.zero_grad()
        logits = self.net(torch.tensor(self.xs.transpose(0, 2, 1)))
        torch.nn.functional.cross_entropy(logits, torch.tensor(self.labels)).backward()
        return grads_to_list(grads), torch_grads_to_prelens(self.net)


def cnn_pair(batch: int = 100, seed: int = 0, dtype: Any = np.float64) -> CnnPair:
    import torch

    torch.manual_seed(seed)
    net = torch_cnn().to(torch.float64 if dtype == np.float64 else torch.float32)
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((batch, 40, 1)).astype(dtype)
    labels = rng.integers(0, 10, batch)
    return CnnPair(prelens_cnn(dtype), params_from_torch(net, dtype), net, xs, labels)


def check_gradients(pair: CnnPair) -> float:
    ours, theirs = pair.gradients()
    err = max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in zip(ours, theirs))
    tol = 1e-12 if pair.xs.dtype == np.float64 else 1e-5
    assert err <= tol, f"gradients differ from PyTorch's by {err:.2e}"
    return err


# ------------------------------------------------------------------ the steps


def numpy_step(pair: CnnPair) -> Any:
    from prelens.learn import adam
    from prelens.train._step import step_of

    opt = adam(1e-2)
    core = step_of(pair.model, softmax_cross_entropy, opt, False)
    state = {"p": pair.params, "s": opt.init(pair.params)}

    def run() -> None:
        state["p"], state["s"], _ = core(state["p"], state["s"], pair.xs, pair.labels)

    return run


def torch_step(pair: CnnPair) -> Any:
    import torch

    net = pair.net
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    xs, labels = torch.tensor(pair.xs.transpose(0, 2, 1)), torch.tensor(pair.labels)

    def run() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xs), labels).backward()
        opt.step()

    return run


def jax_prelens_step(pair: CnnPair) -> Any:
    import jax

    import prelens
    from prelens.learn import adam
    from prelens.train import compile_step

    opt = adam(1e-2)
    step = compile_step(pair.model, softmax_cross_entropy, opt)
    params = prelens.backend.to_backend(pair.params, "jax")
    state = {"p": params, "s": prelens.backend.to_backend(opt.init(pair.params), "jax")}
    batch = prelens.backend.to_backend((pair.xs, pair.labels), "jax")

    def run() -> None:
        state["p"], state["s"], loss = step(state["p"], state["s"], batch)
        jax.block_until_ready(loss)

    return run


def jax_hand_step(pair: CnnPair) -> Any:
    """The same step written directly in JAX: lax.conv_general_dilated (NWC), jax.grad, Adam by hand."""
    import jax
    import jax.numpy as jnp

    def forward(params: Any, x: Any) -> Any:
        for w, b in params[:3]:
            x = jax.lax.conv_general_dilated(
                x, w, window_strides=(2,), padding=[(1, 1)], dimension_numbers=("NWC", "WIO", "NWC")
            )
            x = jax.nn.relu(x + b)
        w, b = params[3]
        return x.reshape(x.shape[0], -1) @ w + b

    def loss_fn(params: Any, x: Any, y: Any) -> Any:
        logits = forward(params, x)
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0])

    @jax.jit  # type: ignore[untyped-decorator]
    def step(params: Any, m: Any, v: Any, t: Any, x: Any, y: Any) -> Any:
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        params = jax.tree_util.tree_map(lambda p, m, v: p - 1e-2 * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), params, m, v)
        return params, m, v, t, loss

    convs = [p for p in pair.params if p != ()]
    params = [(jnp.asarray(p.weight), jnp.asarray(p.bias)) for p in convs]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = {"s": (params, zeros, zeros, jnp.asarray(0.0, params[0][0].dtype))}
    x, y = jnp.asarray(pair.xs), jnp.asarray(pair.labels)

    def run() -> None:
        *s, loss = step(*state["s"], x, y)
        state["s"] = tuple(s)
        jax.block_until_ready(loss)

    return run


def interleaved(runs: dict[str, Any], rounds: int, warmup: int = 20) -> dict[str, float]:
    """Median seconds per call of each function, calls interleaved round by round."""
    for _ in range(warmup):
        for f in runs.values():
            f()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, f in runs.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--threads", type=int, default=None, help="BLAS/torch/XLA threads (default: the libraries')")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--skip-jax", action="store_true")
    args = ap.parse_args(argv)
    dtype = np.dtype(args.dtype)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if dtype == np.float64:
        import jax

        jax.config.update("jax_enable_x64", True)

    pair = cnn_pair(dtype=dtype)
    print(f"gradients equal PyTorch's: max relative difference {check_gradients(pair):.1e}")
    runs = {"prelens numpy": numpy_step(pair), "torch eager": torch_step(cnn_pair(dtype=dtype))}
    if not args.skip_jax:
        runs["prelens jax"] = jax_prelens_step(cnn_pair(dtype=dtype))
        runs["hand-written jax"] = jax_hand_step(cnn_pair(dtype=dtype))
    med = interleaved(runs, args.rounds)
    print(f"MNIST-1D CNN training step, batch 100, {dtype.name}, {args.rounds} interleaved rounds (medians):")
    for k, v in med.items():
        print(f"  {k:18s} {v * 1e6:9.1f} us")
    print(f"  numpy / torch eager:      {med['prelens numpy'] / med['torch eager']:.2f}x  (target <= 1.5)")
    if not args.skip_jax:
        print(f"  prelens jax / hand jax:   {med['prelens jax'] / med['hand-written jax']:.2f}x  (target <= 1.15)")


if __name__ == "__main__":
    main()
