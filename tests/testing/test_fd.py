"""The finite differences of ``check_vjp`` bound their own error: the true derivative lies within it."""

import math

import numpy as np
import pytest

from prelens.testing._fd import directional_derivative, noise_level


def run(g, *, size=None, input_size=0.0, noise=0.0, first_step=1e-4, done=lambda d: False):
    """The derivative at 0 of ``g(t)`` (a probe that reports ``|g|`` as the size); every rung tried
    unless ``done`` stops the ladder."""

    def probe(t):
        value = g(t)
        return (value, abs(value) if size is None else size) if math.isfinite(value) else None

    g0 = g(0.0)
    return directional_derivative(
        probe,
        g0,
        abs(g0) if size is None else size,
        input_size,
        first_step=first_step,
        done=done,
        noise=noise,
    )


def test_a_smooth_function_is_differentiated_to_far_below_the_tolerance():
    d = run(lambda t: math.sin(1.3 + 2 * t) * math.exp(t))
    truth = 2 * math.cos(1.3) + math.sin(1.3)
    assert abs(d.value - truth) <= d.error <= 1e-10 * abs(truth)


@pytest.mark.parametrize("at", [0.0, 1e-13, 3e-7, -2e-5], ids=["on it", "a hair off", "near", "nearer the step"])
def test_a_kink_widens_the_bound_to_cover_either_slope(at):
    """``relu``-like: slopes 1 and 4 on the two sides of ``at``. Central differences that straddle the
    kink give their mean; a kink on the point itself (no derivative) must not fail either slope."""
    g = lambda t: 3 * max(t - at, 0.0) + t
    d = run(g)
    truth = 1.0 if at > 0 else 4.0
    assert abs(d.value - truth) <= d.error
    if at == 0.0:  # on the kink both one-sided slopes are right
        assert abs(d.value - (5.0 - truth)) <= d.error


def test_the_rounding_of_large_outputs_widens_the_bound():
    """An output offset by 1e6 keeps 10 digits only: the bound says so, and covers the error."""
    g = lambda t: 1e6 + math.tanh(0.4 + t)
    d = run(g)
    truth = 1 - math.tanh(0.4) ** 2
    assert abs(d.value - truth) <= d.error
    assert d.error > 1e-9  # ten digits, not sixteen


def test_the_rounding_of_large_inputs_widens_the_bound():
    """The input 1e4 + 0.3 stepped by 1e4·t: the rounding of the input itself (a unit in the last
    place of 1e4) shows in the differences although the output is small and straight."""
    x0, scale = 1e4 + 0.3, 1e4
    g = lambda t: 40 * (((x0 + t * scale) - 1e4) - 0.3)
    truth = 40 * scale
    for step in (1e-4, 1e-6, 1e-8):
        d = run(g, size=1.0, input_size=x0 * 40, first_step=step, done=lambda d: True)
        assert abs(d.value - truth) <= d.error, step


def test_noise_level_sees_rounding_that_the_sizes_do_not_show():
    """``(s + 1e6) - 1e6`` is O(1) but rounded on a grid of 1.2e-10: the noise level sees the grid."""
    s = np.random.default_rng(0).standard_normal(20)
    g = lambda t: float(np.sum(((s + t) + 1e6) - 1e6))
    noise = noise_level(lambda t: (g(t), 1.0), g(0.0))
    assert 1e-11 < noise < 1e-8
    curved = lambda t: float(np.sum(np.sin(s + 50 * t)))
    assert noise_level(lambda t: (curved(t), 1.0), curved(0.0)) < 1e-13  # curvature is not noise
