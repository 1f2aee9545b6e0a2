"""Prediction, metrics, batching and checkpoints on ``array_api_strict`` equal numpy's (see ``train_cases``).

PyTorch and JAX run the same checks from ``tests_peers``. The numpy-only tests
below pin the refusals of a bad ``backend=``: one clear line, before any file is read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prelens
from prelens import PrelensError
from prelens.io import load_checkpoint, save_checkpoint
from prelens.nn import mlp
from prelens.train._resume import read_checkpoint

from .train_cases import CHECKS

pytest.importorskip("array_api_strict")


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_on_array_api_strict(check: Callable[[str, Path], None], tmp_path: Path) -> None:
    check("array_api_strict", tmp_path)


BAD = [
    ("nump", r"backend must be one of \('numpy', 'array_api_strict', 'torch', 'jax'\), got 'nump'"),
    (3, r"backend must be one of numpy, array_api_strict, torch, jax or an array API namespace, got 3"),
    (None, r"backend must be one of numpy, array_api_strict, torch, jax or an array API namespace, got None"),
    (np.random, r"backend must be one of numpy, .* or an array API namespace, got <module 'numpy.random'"),
]


@pytest.mark.parametrize(("backend", "message"), BAD, ids=[repr(b)[:12] for b, _ in BAD])
def test_a_bad_backend_is_one_clear_error(backend: Any, message: str, tmp_path: Path) -> None:
    net = mlp(2, [3])
    path = tmp_path / "net.prelens"
    prelens.save_model(path, net, net.init(0))
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("load_checkpoint", lambda b: load_checkpoint(path, backend=b)),
        ("load_model", lambda b: prelens.load_model(path, backend=b)),
        ("fit", lambda b: read_checkpoint(path, None, None, backend=b)),
    ]
    for fn, call in calls:
        with pytest.raises(PrelensError, match=rf"^{fn}: {message}") as err:
            call(backend)
        assert "\n" not in str(err.value) and err.value.__cause__ is None
    # refused before any file is opened: a missing file is not what is reported
    for fn, call in (("load_checkpoint", lambda b: load_checkpoint(tmp_path / "none.npz", backend=b)),):
        with pytest.raises(PrelensError, match=rf"^{fn}: backend"):
            call(backend)
    with pytest.raises(PrelensError, match=r"^load_model: backend"):
        prelens.load_model(tmp_path / "none.prelens", backend=backend)


def test_numpy_backend_returns_the_arrays_as_before(tmp_path: Path) -> None:
    tree: dict[str, Any] = {"w": np.arange(6.0).reshape(2, 3), "n": np.int32(4), "s": "x"}
    save_checkpoint(tmp_path / "t.npz", tree)
    for backend in ("numpy", np):
        got = load_checkpoint(tmp_path / "t.npz", backend=backend)
        assert type(got["w"]) is np.ndarray and np.array_equal(got["w"], tree["w"]) and got["w"].flags.writeable
        assert type(got["n"]) is np.int32 and got["s"] == "x"


def test_a_library_that_cannot_hold_the_files_arrays_is_named(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "half.npz", {"h": np.ones(3, np.float16)})
    with pytest.raises(
        PrelensError, match=r"^load_checkpoint: backend must be a library that holds every array of the file \("
    ):
        load_checkpoint(tmp_path / "half.npz", backend="array_api_strict")
