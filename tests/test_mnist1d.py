"""The MNIST-1D table's smoke run: the paper's four models, trained briefly on numpy, beat chance.

The full table (3 seeds, 8,000 steps each, numpy and JAX) is ``python -m prelens_bench.mnist1d``;
its numbers are in docs/mnist1d.md. Here every model trains a few hundred steps and must reach
more than 20% test accuracy (chance is 10%); no time is asserted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prelens.core import tree_shapes
from prelens.datasets import load_mnist1d
from prelens.errors import ArgumentError, StructureError
from prelens_bench.mnist1d import (
    MNIST1D_MODELS,
    PAPER_ACCURACY,
    format_table,
    mnist1d_model,
    takes_channel,
    train_mnist1d,
)

#: Steps of the smoke run, per model (the paper trains 8,000).
SMOKE_STEPS = {"logreg": 200, "mlp": 200, "cnn": 100, "gru": 100}


@pytest.mark.parametrize("name", list(MNIST1D_MODELS))
def test_each_model_beats_chance_after_a_short_training(name: str, mnist1d_cache: Path):
    split = load_mnist1d(channel=takes_channel(name))
    result = train_mnist1d(name, split, steps=SMOKE_STEPS[name], seed=0)
    assert result.steps == SMOKE_STEPS[name] and result.backend == "numpy"
    assert result.test_accuracy > 0.2, f"{name}: {result.test_accuracy:.1%} after {result.steps} steps"


@pytest.mark.parametrize(
    ("name", "shapes", "count"),
    [
        ("logreg", ["f64[40,10]", "f64[10]"], 410),
        ("mlp", ["f64[40,100]", "f64[100]", "f64[100,100]", "f64[100]", "f64[100,10]", "f64[10]"], 15_210),
        # as the repository's PyTorch models (models.py): ConvBase 5,210 parameters, GRUBase 5,134
        (
            "cnn",
            ["f64[5,1,25]", "f64[25]", "f64[3,25,25]", "f64[25]", "f64[3,25,25]", "f64[25]", "f64[125,10]", "f64[10]"],
            5_210,
        ),
        ("gru", None, 5_134),
    ],
)
def test_the_models_have_the_papers_parameter_counts(name: str, shapes: list[str] | None, count: int):
    from prelens.core import tree_leaves

    params = mnist1d_model(name).init(0)
    if shapes is not None:
        assert [s for s in tree_leaves(tree_shapes(params)) if isinstance(s, str)] == shapes
    assert sum(int(np.size(leaf)) for leaf in tree_leaves(params)) == count


def test_a_part_epoch_takes_exactly_the_steps_asked(mnist1d_cache: Path):
    """50 steps = one epoch of 40 batches of 100, then 10 batches of a random 1,000 rows."""
    assert train_mnist1d("logreg", steps=50, seed=3).steps == 50
    with_channel = train_mnist1d("logreg", load_mnist1d(channel=True), steps=50, seed=3)  # the axis dropped
    assert with_channel.test_accuracy == train_mnist1d("logreg", load_mnist1d(), steps=50, seed=3).test_accuracy
    assert train_mnist1d("logreg", steps=7, seed=3, batch_size=1000).steps == 7  # 4 per epoch: 1 epoch + 3


def test_the_table_lists_every_model_beside_the_paper():
    from prelens_bench.mnist1d import Mnist1dResult

    results = [
        Mnist1dResult(name, seed, "numpy", 10, None, 1.0, PAPER_ACCURACY[name] / 100 + 0.01 * seed, 2.0)
        for name in MNIST1D_MODELS
        for seed in (0, 1, 2)
    ]
    table = format_table(results, list(MNIST1D_MODELS), ["numpy", "jax"], 10)
    lines = table.splitlines()
    assert lines[0] == "| model | paper | prelens, numpy (3 seeds, 10 steps) | prelens, jax (0 seeds, 10 steps) |"
    assert lines[2] == "| logreg | 32% | 33.0 ± 1.0% (2.0 s) | — |"
    assert lines[5] == "| gru | 91% | 92.0 ± 1.0% (2.0 s) | — |"


def test_bad_arguments_are_refused_before_work():
    with pytest.raises(StructureError, match=r"model must be one of \('logreg', 'mlp', 'cnn', 'gru'\)"):
        mnist1d_model("resnet")
    with pytest.raises(StructureError, match="backend"):
        train_mnist1d("mlp", steps=1, backend="torch")
    with pytest.raises(ArgumentError, match="steps"):
        train_mnist1d("mlp", steps=0)


def test_the_table_script_prints_a_line_per_run_and_the_table(mnist1d_cache: Path, capsys: pytest.CaptureFixture[str]):
    from prelens_bench.mnist1d import main

    assert main(["--models", "logreg", "mlp", "--seeds", "0", "1", "--steps", "40", "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    assert out.count(" seed ") == 4 and "logreg seed 1 numpy: test " in out
    table = out[out.index("| model |") :].splitlines()
    assert table[0] == "| model | paper | prelens, numpy (2 seeds, 40 steps) |"
    assert table[2].startswith("| logreg | 32% | ") and table[3].startswith("| mlp | 68% | ")
    assert main(["--steps", "0"]) == 2 and "--steps must be >= 1" in capsys.readouterr().err
