"""The optimisers and schedules of prelens.learn against torch.optim where the docs say they agree.

Each case runs 300 updates from the same parameters along the same random gradients (three leaves: a matrix, a
vector, a scalar), prelens on numpy and torch.optim on tensors, and compares the parameters after every update:
to 1e-12 in float64. The object form and the lens form (a pullback of ``opt.lens``) are compared with torch alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from prelens import learn, vjp

O = torch.optim
SHAPES = [(5, 3), (3,), ()]
STEPS = 300

#: name -> (prelens optimiser, torch optimiser and its scheduler (or None) on a list of tensors)
CASES: dict[str, tuple[Any, Callable[[list[torch.Tensor]], tuple[Any, Any]]]] = {
    "sgd": (learn.sgd(0.05), lambda p: (O.SGD(p, lr=0.05), None)),
    "momentum": (learn.momentum(0.05, 0.9), lambda p: (O.SGD(p, lr=0.05, momentum=0.9), None)),
    "nesterov": (
        learn.momentum(0.05, 0.8, nesterov=True),
        lambda p: (O.SGD(p, lr=0.05, momentum=0.8, nesterov=True), None),
    ),
    "adagrad": (learn.adagrad(0.05), lambda p: (O.Adagrad(p, lr=0.05), None)),
    "rmsprop": (learn.rmsprop(0.01, rho=0.99), lambda p: (O.RMSprop(p, lr=0.01, alpha=0.99), None)),
    "adam": (learn.adam(0.01), lambda p: (O.Adam(p, lr=0.01), None)),
    "adam betas": (
        learn.adam(0.003, b1=0.5, b2=0.9, eps=1e-6),
        lambda p: (O.Adam(p, lr=0.003, betas=(0.5, 0.9), eps=1e-6), None),
    ),
    "adamw": (learn.adamw(0.01), lambda p: (O.AdamW(p, lr=0.01), None)),
    "adamw decay": (learn.adamw(0.01, weight_decay=0.3), lambda p: (O.AdamW(p, lr=0.01, weight_decay=0.3), None)),
    "step_decay": (
        learn.sgd(learn.step_decay(0.1, every=30, factor=0.5)),
        lambda p: _scheduled(O.SGD(p, lr=0.1), lambda o: O.lr_scheduler.StepLR(o, 30, 0.5)),
    ),
    "exponential_decay": (
        learn.momentum(learn.exponential_decay(0.1, rate=0.99)),
        lambda p: _scheduled(O.SGD(p, lr=0.1, momentum=0.9), lambda o: O.lr_scheduler.ExponentialLR(o, 0.99)),
    ),
    "adamw under a schedule": (  # the decay follows lr, as PyTorch's does
        learn.adamw(learn.step_decay(0.01, every=50, factor=0.5), weight_decay=0.1),
        lambda p: _scheduled(O.AdamW(p, lr=0.01, weight_decay=0.1), lambda o: O.lr_scheduler.StepLR(o, 50, 0.5)),
    ),
}


def _scheduled(opt: Any, make: Callable[[Any], Any]) -> tuple[Any, Any]:
    return opt, make(opt)


def _lens_update(opt: Any) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
    """``update`` through the lens: the delta ``−g`` pulled back through ``opt.lens``."""

    def update(grads: Any, state: Any, params: Any) -> tuple[Any, Any]:
        _, pullback = vjp(opt.lens, (), (params, state))
        _, (new_params, new_state) = pullback([-g for g in grads])
        return new_params, new_state

    return update


@pytest.mark.parametrize("form", ["object", "lens"])
@pytest.mark.parametrize("name", list(CASES))
def test_every_update_equals_torch_optim(name: str, form: str) -> None:
    ours, make_torch = CASES[name]
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    theirs = [torch.tensor(p.copy(), requires_grad=True) for p in start]
    torch_opt, scheduler = make_torch(theirs)
    update = ours.update if form == "object" else _lens_update(ours)
    params, state = [p.copy() for p in start], ours.init(start)
    for t, g in enumerate(grads):
        params, state = update([x.copy() for x in g], state, params)
        for tensor, x in zip(theirs, g):
            tensor.grad = torch.tensor(x)
        torch_opt.step()
        if scheduler is not None:
            scheduler.step()
        for i, (a, b) in enumerate(zip(params, theirs)):
            ref = b.detach().numpy()
            err = float(np.max(np.abs(a - ref))) / max(1.0, float(np.max(np.abs(ref))))
            assert err <= 1e-12, f"{name} ({form}): leaf {i} differs from torch.optim by {err:.1e} after {t + 1} steps"


def test_clipping_by_global_norm_equals_torchs_clip_grad_norm() -> None:
    """``clip_by_global_norm(sgd(lr), c)`` is ``clip_grad_norm_(c)`` then ``SGD(lr).step()``, to the 1e-6 that torch
    adds to the norm it divides by (prelens divides by the norm, as optax does)."""
    rng = np.random.default_rng(1)
    start = [rng.standard_normal(s) for s in SHAPES]
    theirs = [torch.tensor(p.copy(), requires_grad=True) for p in start]
    torch_opt = O.SGD(theirs, lr=0.1)
    opt = learn.clip_by_global_norm(learn.sgd(0.1), 1.0)
    params, state = [p.copy() for p in start], opt.init(start)
    for _ in range(50):
        g = [3.0 * rng.standard_normal(s) for s in SHAPES]  # most norms above 1, some below
        params, state = opt.update(g, state, params)
        for tensor, x in zip(theirs, g):
            tensor.grad = torch.tensor(x)
        torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        torch_opt.step()
    for a, b in zip(params, theirs):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-6, atol=1e-6)
