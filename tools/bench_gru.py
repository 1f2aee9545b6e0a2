"""Time the MNIST-1D GRU model's training step: prelens on numpy, prelens on JAX (compiled), PyTorch eager.

The model of Greydanus & Kobak's MNIST-1D GRU: a bidirectional GRU of hidden size 6 over the
40 steps of one feature, its outputs flattened ``(N, 40·12)``, a linear layer 480 -> 10,
softmax cross-entropy; batch 100, Adam 1e-2. All three start from the same weights; the
gradients are checked equal first (float64, to 1e-10); then the steps run interleaved (one of
each per round, float32 as in training) and the medians are printed with their ratios.

    PYTHONPATH=$PWD python tools/bench_gru.py [--rounds 50] [--dtype float32]

The machine may be shared: numbers vary between runs; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

import prelens
from prelens import chain
from prelens.backend._arrays import namespace
from prelens.core import parameter_free
from prelens.learn import adam
from prelens.nn import DenseParams, RecurrentParams, bidirectional, dense, gru, softmax_cross_entropy
from prelens.train import compile_step, step, value_and_grad

N, T, F, H, C = 100, 40, 1, 6, 10


def flatten_lens():  # type: ignore[no-untyped-def]
    """``(N, T, 2H) -> (N, T·2H)`` (the conv helper's ``flatten()`` does the same)."""

    def fwd(x):  # type: ignore[no-untyped-def]
        return tuple(x.shape), namespace(x).reshape(x, (x.shape[0], -1))

    def bwd(shape, da):  # type: ignore[no-untyped-def]
        return namespace(da).reshape(da, shape)

    return parameter_free("flatten", fwd, bwd)


def prelens_model(dtype):  # type: ignore[no-untyped-def]
    return chain(bidirectional(gru(F, H, dtype=dtype)), flatten_lens(), dense(T * 2 * H, C, None, dtype=dtype))


def torch_model(dtype):  # type: ignore[no-untyped-def]
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = torch.nn.GRU(F, H, batch_first=True, bidirectional=True, dtype=dtype)
            self.out = torch.nn.Linear(T * 2 * H, C, dtype=dtype)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.out(self.gru(x)[0].reshape(x.shape[0], -1))

    return Net()


def params_from_torch(net, dtype):  # type: ignore[no-untyped-def]
    def g(name):  # type: ignore[no-untyped-def]
        return getattr(net.gru, name).detach().numpy().astype(dtype)

    def rp(suffix: str) -> RecurrentParams:
        w = (g(f"weight_ih_l0{suffix}").T.copy(), g(f"weight_hh_l0{suffix}").T.copy())
        return RecurrentParams(*w, g(f"bias_ih_l0{suffix}"), g(f"bias_hh_l0{suffix}"))

    out = DenseParams(
        net.out.weight.detach().numpy().T.astype(dtype).copy(), net.out.bias.detach().numpy().astype(dtype)
    )
    return [(rp(""), rp("_reverse")), (), out]


def check_gradients() -> float:
    """The largest relative difference of prelens's gradients from torch's (float64)."""
    import torch

    torch.manual_seed(0)
    net = torch_model(torch.float64)
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((N, T, F)), rng.integers(0, C, N)
    loss = torch.nn.functional.cross_entropy(net(torch.tensor(xs)), torch.tensor(ys))
    loss.backward()
    value, grads = value_and_grad(
        prelens_model(np.float64), softmax_cross_entropy, params_from_torch(net, np.float64), (xs, ys)
    )
    (fw, bw), _, out = grads
    theirs = [
        (fw.weight_ih, net.gru.weight_ih_l0.grad.T),
        (fw.weight_hh, net.gru.weight_hh_l0.grad.T),
        (fw.bias_ih, net.gru.bias_ih_l0.grad),
        (fw.bias_hh, net.gru.bias_hh_l0.grad),
        (bw.weight_ih, net.gru.weight_ih_l0_reverse.grad.T),
        (bw.weight_hh, net.gru.weight_hh_l0_reverse.grad.T),
        (bw.bias_ih, net.gru.bias_ih_l0_reverse.grad),
        (bw.bias_hh, net.gru.bias_hh_l0_reverse.grad),
        (out.weight, net.out.weight.grad.T),
        (out.bias, net.out.bias.grad),
    ]
    worst = abs(value - loss.item()) / abs(loss.item())
    for a, b in theirs:
        b = b.numpy()
        worst = max(worst, float(np.max(np.abs(a - b)) / max(1e-300, float(np.max(np.abs(b))))))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = ap.parse_args()

    import jax
    import torch

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    worst = check_gradients()
    print(f"gradients vs torch (float64): max relative difference {worst:.1e}")
    assert worst < 1e-10, "gradients differ from torch"

    dt = np.dtype(args.dtype)
    tdt = getattr(torch, args.dtype)
    torch.manual_seed(1)
    torch.set_num_threads(1)
    net = torch_model(tdt)
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((N, T, F)).astype(dt), rng.integers(0, C, N)
    xt, yt = torch.tensor(xs), torch.tensor(ys)
    topt = torch.optim.Adam(net.parameters(), lr=1e-2)

    model, opt = prelens_model(dt), adam(1e-2)
    p_np = params_from_torch(net, dt)
    s_np = opt.init(p_np)
    compiled = compile_step(model, softmax_cross_entropy, opt)
    p_jx, s_jx = prelens.backend.to_backend((p_np, s_np), "jax")
    batch_jx = prelens.backend.to_backend((xs, ys), "jax")

    def run_numpy() -> None:
        nonlocal p_np, s_np
        p_np, s_np, _ = step(model, softmax_cross_entropy, p_np, (xs, ys), opt, s_np)

    def run_jax() -> None:
        nonlocal p_jx, s_jx
        p_jx, s_jx, loss = compiled(p_jx, s_jx, batch_jx)
        jax.block_until_ready(loss)

    def run_torch() -> None:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xt), yt)
        loss.backward()
        topt.step()

    runs = {"prelens numpy": run_numpy, "prelens jax (compile_step)": run_jax, "pytorch eager": run_torch}
    first: dict[str, float] = {}
    for name, fn in runs.items():  # warm up (and compile: the first call's time is the compile time)
        t0 = time.perf_counter()
        fn()
        first[name] = time.perf_counter() - t0
        for _ in range(2):
            fn()
    print("first call (trace + compile for jax): " + ", ".join(f"{k} {v:.2f} s" for k, v in first.items()))
    times: dict[str, list[float]] = {k: [] for k in runs}
    faults: dict[str, list[int]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    base = statistics.median(times["pytorch eager"])
    print(f"MNIST-1D GRU training step, batch {N}, {args.dtype}, {args.rounds} interleaved rounds (medians):")
    for name in runs:
        med = statistics.median(times[name])
        flt = statistics.median(faults[name])
        print(f"  {name:28s} {med * 1e3:8.3f} ms   {med / base:5.2f}x torch   {flt:6.0f} minor faults")


if __name__ == "__main__":
    main()
