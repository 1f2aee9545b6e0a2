"""Backend cases: ``conv1d``, ``conv2d`` (stride, padding, dilation, groups), ``max_pool``, ``avg_pool``,
``flatten``, and the composed twins and their pieces."""

from __future__ import annotations

from typing import Any

import numpy as np

from prelens.nn import avg_pool, composed, conv1d, conv2d, flatten, max_pool

from .harness import Case


def _lens_case(name: str, make_lens: Any, x_shape: tuple[int, ...], dtype: type = np.float64) -> Case:
    def make(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = make_lens()
        p = lens.init(rng)
        x = rng.standard_normal(x_shape).astype(dtype)
        if "max" in name:  # ties, where every library must pick the first maximum
            x = np.round(x * 2) / 2
        _, y = lens.fwd(p, x)
        return lens, p, x, rng.standard_normal(y.shape).astype(dtype)

    return Case(name, make)


CASES = [
    _lens_case("conv1d(3→4, k3)", lambda: conv1d(3, 4, 3), (2, 9, 3)),
    _lens_case("conv1d(1→5, k5, s2, p1)", lambda: conv1d(1, 5, 5, stride=2, padding=1), (3, 40, 1)),
    _lens_case(
        "conv1d(4→6, k3, s2, p2, d2, g2)",
        lambda: conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
        (2, 13, 4),
    ),
    _lens_case("conv1d f32", lambda: conv1d(3, 4, 3, padding=1, dtype=np.float32), (2, 9, 3), np.float32),
    _lens_case("conv2d(3→4, k3)", lambda: conv2d(3, 4, 3), (2, 6, 5, 3)),
    _lens_case(
        "conv2d(4→6, k(3,2), s(2,1), p(1,1), d(1,2), g2)",
        lambda: conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2),
        (2, 7, 8, 4),
    ),
    _lens_case("max_pool(2)", lambda: max_pool(2), (2, 9, 3)),
    _lens_case("max_pool(3, s2, p1)", lambda: max_pool(3, stride=2, padding=1), (2, 9, 3)),
    _lens_case("max_pool((2,3), p(1,1))", lambda: max_pool((2, 3), padding=(1, 1)), (2, 5, 7, 3)),
    _lens_case("avg_pool(3, s2, p1)", lambda: avg_pool(3, stride=2, padding=1), (2, 9, 3)),
    _lens_case("avg_pool((2,2))", lambda: avg_pool((2, 2)), (2, 6, 4, 3)),
    _lens_case("flatten", flatten, (2, 5, 3)),
    _lens_case("composed conv1d g2", lambda: composed.conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 9, 4)),
    _lens_case("composed conv2d", lambda: composed.conv2d(2, 3, 2, padding=1), (2, 4, 5, 2)),
    _lens_case("composed max_pool", lambda: composed.max_pool(3, stride=2, padding=1), (2, 9, 3)),
    _lens_case("composed avg_pool", lambda: composed.avg_pool((2, 2)), (2, 6, 4, 3)),
]
