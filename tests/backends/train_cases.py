"""Prediction, evaluation, metrics, batching and checkpoints on another array library, against numpy.

Each ``check_*`` function takes a backend name (``"array_api_strict"``,
``"torch"``, ``"jax"``) and a fresh directory, builds its values in numpy,
moves them to the backend with :func:`prelens.backend.to_backend`, and asserts that
what prelens returns is in the backend's library and equals what it returns
for the numpy values (exactly for integers, counts and checkpoints; to
``1e-12`` relative in float64, ``1e-5`` in float32 for outputs). ``CHECKS``
lists them all: ``tests/backends/test_train_backends.py`` runs them on
``array_api_strict``, ``tests_peers`` on PyTorch and JAX::

    for check in CHECKS:
        check("torch", tmp_path / check.__name__)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prelens
from prelens import PrelensError
from prelens.backend import _arrays as B
from prelens.io import load_checkpoint, save_checkpoint
from prelens.learn import AdamState, sgd
from prelens.nn import DenseParams, dense, mlp, mse, softmax_cross_entropy
from prelens.train import accuracy, confusion_matrix, evaluate, fit, predict, predict_proba
from prelens.train._data import cast, model_dtype, rows, take
from prelens.train._resume import read_checkpoint

from .harness import assert_close, assert_in_library

Tree = Any

#: Rows of the data sets: what users evaluate on (hundreds), split into ragged chunks below.
N = 301


def _lib(backend: str) -> str:
    return str(B.namespace_name(B.resolve_backend("test", backend)))


def _leaves(tree: Tree) -> list[Any]:
    out: list[Any] = []
    B.tree_map_arrays(out.append, tree)
    return out


def _classifier(dtype: type, k: int = 3) -> tuple[Any, Tree, np.ndarray, np.ndarray]:
    """An MLP ``8 → 16 → k`` (logits), its parameters, ``N`` inputs and integer labels."""
    rng = np.random.default_rng(7)
    model = mlp(8, [16, k], "tanh", last_activation=None, dtype=dtype)
    xs: np.ndarray = rng.standard_normal((N, 8)).astype(dtype)
    labels = rng.integers(0, max(k, 2), N)
    return model, model.init(rng), xs, labels


def _assert_same_array(ref: np.ndarray, got: Any, lib: str, what: str) -> None:
    """``got`` is ``lib``'s array of ``ref``'s dtype, shape and values (bit for bit)."""
    assert_in_library(got, lib, what)
    host = B.to_numpy(got)
    assert host.dtype == ref.dtype and host.shape == ref.shape, (
        f"{what}: {host.dtype}{host.shape}, not {ref.dtype}{ref.shape}"
    )
    assert np.array_equal(host, ref, equal_nan=ref.dtype.kind in "fc"), f"{what}: the values changed"


# ---------------------------------------------------------------- prediction and metrics


def check_predict(backend: str, tmp: Path) -> None:
    """``predict``, all at once and in ragged chunks, in float64 and float32, equals numpy's."""
    lib = _lib(backend)
    for dtype in (np.float64, np.float32):
        model, params, xs, _ = _classifier(dtype)
        ref = predict(model, params, xs)
        px, xx = prelens.backend.to_backend((params, xs), backend)
        for batch_size in (None, 64, 1000):
            out = predict(model, px, xx, batch_size=batch_size)
            what = f"predict({np.dtype(dtype).name}, batch_size={batch_size}) on {lib}"
            assert_in_library(out, lib, what)
            assert_close(ref, out, what)
        assert tuple(predict(model, px, xx[:0, ...], batch_size=5).shape) == (0, 3)


def check_predict_proba(backend: str, tmp: Path) -> None:
    """Softmax rows (k > 1) and ``[1 − σ, σ]`` columns (one logit, 2-D and 1-D) equal numpy's."""
    lib = _lib(backend)
    for dtype in (np.float64, np.float32):
        for k in (3, 1):
            model, params, xs, _ = _classifier(dtype, k)
            ref = predict_proba(model, params, xs)
            px, xx = prelens.backend.to_backend((params, xs), backend)
            got = predict_proba(model, px, xx, batch_size=50)
            what = f"predict_proba(k={k}, {np.dtype(dtype).name}) on {lib}"
            assert_in_library(got, lib, what)
            assert_close(ref, got, what)
    big = np.array([[1000.0], [-1000.0], [0.0]])
    got = predict_proba(
        dense(1, 1, None), prelens.backend.to_backend(dense(1, 1, None).init(0), backend), B.to_backend(big, backend)
    )
    assert np.allclose(B.to_numpy(got).sum(axis=1), 1.0) and np.isfinite(B.to_numpy(got)).all()


def check_accuracy_and_confusion(backend: str, tmp: Path) -> None:
    """``accuracy`` equals numpy's exactly; ``confusion_matrix`` counts the same, in the outputs' library."""
    lib = _lib(backend)
    for k in (3, 1):
        model, params, xs, labels = _classifier(np.float64, k)
        px, xx, lx = prelens.backend.to_backend((params, xs, labels), backend)
        one_hot = np.eye(max(k, 2))[labels]
        assert accuracy(model, px, xx, lx) == accuracy(model, params, xs, labels)
        assert accuracy(model, px, xx, lx, batch_size=40) == accuracy(model, params, xs, labels)
        assert accuracy(model, px, xx, B.to_backend(one_hot, backend)) == accuracy(model, params, xs, one_hot)
        assert accuracy(model, px, xx, labels) == accuracy(model, params, xs, labels)  # numpy labels too
        ref = confusion_matrix(model, params, xs, labels)
        got = confusion_matrix(model, px, xx, lx, batch_size=100)
        _assert_same_array(ref, got, lib, f"confusion_matrix(k={k}) on {lib}")
        assert int(B.to_numpy(got).sum()) == N
    model, params, xs, labels = _classifier(np.float64)
    px, xx = prelens.backend.to_backend((params, xs), backend)
    with pytest.raises(
        PrelensError, match=rf"accuracy: labels must be one label per row of xs \(301\), got 'i64\[5\] \({lib}\)'"
    ):
        accuracy(model, px, xx, B.to_backend(labels[:5], backend))
    with pytest.raises(PrelensError, match=r"confusion_matrix: labels must be one label per row of xs \(301\)"):
        confusion_matrix(model, px, xx, B.to_backend(labels[:5], backend))


def check_evaluate(backend: str, tmp: Path) -> None:
    """``evaluate`` with ``mse`` and ``softmax_cross_entropy`` is numpy's loss, as a Python float."""
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        model, params, xs, labels = _classifier(dtype)
        targets = np.eye(3, dtype=dtype)[labels]
        px, xx, tx, lx = prelens.backend.to_backend((params, xs, targets, labels), backend)
        for loss, truth, truth_x in ((mse, targets, tx), (softmax_cross_entropy, labels, lx)):
            ref = evaluate(model, loss, params, xs, truth)
            got = evaluate(model, loss, px, xx, truth_x)
            assert type(got) is float and math.isclose(got, ref, rel_tol=tol), (loss, dtype, got, ref)


# ---------------------------------------------------------------- what fit does to its data


def check_data(backend: str, tmp: Path) -> None:
    """``rows``, ``cast``, ``take`` and ``model_dtype`` keep the data in its library, equal to numpy's."""
    lib = _lib(backend)
    _, params, xs, labels = _classifier(np.float32)
    ys = np.eye(3)[labels]  # float64 targets: cast to the model's float32
    data = (xs, (ys, labels))
    bx = B.to_backend(data, backend)
    assert rows("data", *bx) == rows("data", *data) == N
    dtype = model_dtype(B.to_backend(params, backend))
    assert dtype == model_dtype(params) == np.float32
    cast_ref, cast_got = cast("data", data, dtype), cast("data", bx, dtype)
    for r, g in zip(_leaves(cast_ref), _leaves(cast_got)):
        _assert_same_array(r, g, lib, f"cast on {lib}")
    order = np.random.default_rng(3).permutation(N)
    for o, lo, hi in ((order, 0, 64), (order, 256, N), (None, 64, 128), (None, 300, 364)):
        for r, g in zip(_leaves(take(cast_ref, o, lo, hi)), _leaves(take(cast_got, o, lo, hi))):
            _assert_same_array(r, g, lib, f"take({'order' if o is not None else 'None'}, {lo}, {hi}) on {lib}")
    # the same refusals, naming the same row, as for numpy
    bad = xs.copy()
    bad[123, 4] = np.nan
    for what, arrays in (("numpy", (bad, ys)), (lib, B.to_backend((bad, ys), backend))):
        with pytest.raises(PrelensError, match=r"fit: data\[0\] holds NaN or infinity, first in row 123;") as err:
            rows("data", *arrays)
        assert str(err.value).startswith("fit: data[0]"), what
    huge = ys.copy()
    huge[200, 1] = 1e300
    for arrays in ((xs, huge), B.to_backend((xs, huge), backend)):
        with pytest.raises(
            PrelensError, match=r"fit: data\[1\] overflows when cast to the model's float32, first in row 200"
        ):
            cast("data", arrays, np.dtype(np.float32))
    with pytest.raises(PrelensError, match=r"fit: data must be \(xs, targets\) of arrays with a leading batch axis"):
        rows("data", B.to_backend(np.float64(1.0) + np.zeros(()), backend), B.to_backend(ys, backend))


# ---------------------------------------------------------------- checkpoints and model files


def _tree(rng: np.random.Generator) -> Tree:
    """Parameters and an optimiser state as fit saves them, with leaves of several dtypes and shapes."""
    model = mlp(5, [7, 2], "relu")
    params = model.init(rng)
    state = AdamState(
        3, [DenseParams(w * 0.5, b + 1.0) for w, b in params], [DenseParams(w**2, b**2) for w, b in params]
    )
    extra = {
        "f32": rng.standard_normal((N, 3)).astype(np.float32),
        "i64": rng.integers(-(2**40), 2**40, (4, 2)),
        "i32": rng.integers(-5, 5, 6).astype(np.int32),
        "u8": rng.integers(0, 255, 6).astype(np.uint8),
        "mask": rng.random(5) > 0.5,
        "scalar": np.array(2.5),
        "empty": np.zeros((0, 3)),
        "nan": np.array([np.nan, np.inf, -0.0]),
        "lr": 0.125,
        "name": "run",
    }
    return {"params": params, "opt_state": state, "extra": extra}


def check_checkpoint(backend: str, tmp: Path) -> None:
    """Saved from the backend's arrays, a checkpoint loads back exactly: in that library, or in numpy by default."""
    lib = _lib(backend)
    os.makedirs(tmp, exist_ok=True)
    ref = _tree(np.random.default_rng(0))
    moved = B.to_backend(ref, backend)
    path = tmp / "ckpt.npz"
    save_checkpoint(path, moved, metadata={"epoch": 2})
    on_host = load_checkpoint(path)
    assert B.tree_map_arrays(lambda a: None, on_host) == B.tree_map_arrays(lambda a: None, ref)  # same structure
    for r, g in zip(_leaves(ref), _leaves(on_host)):
        _assert_same_array(r, g, "numpy", "load(default backend)")
    back = load_checkpoint(path, backend=backend)
    assert type(back["opt_state"]) is AdamState and back["opt_state"].step == 3
    assert back["extra"]["lr"] == 0.125 and back["extra"]["name"] == "run"
    for r, g in zip(_leaves(ref), _leaves(back)):
        _assert_same_array(r, g, lib, f'load(backend="{backend}")')
    # like= may be the backend's own arrays: checked by shape and dtype, and named at the first misfit
    again = load_checkpoint(path, like=moved, backend=backend)
    for r, g in zip(_leaves(ref), _leaves(again)):
        _assert_same_array(r, g, lib, f"load(like=<{lib} arrays>)")
    wrong = B.to_backend(_tree(np.random.default_rng(1)), backend)
    wrong["params"][1] = DenseParams(B.to_backend(np.zeros((7, 3)), backend), wrong["params"][1].bias)
    with pytest.raises(
        prelens.errors.CheckpointError, match=r"at \['params'\]\[1\]\.weight: expected f64\[7,3\] \(" + lib
    ):
        load_checkpoint(path, like=wrong)


def check_model_file(backend: str, tmp: Path) -> None:
    """``save_model`` takes the backend's parameters; ``load_model(backend=)`` returns them there, exactly."""
    lib = _lib(backend)
    os.makedirs(tmp, exist_ok=True)
    model, params, xs, _ = _classifier(np.float32)
    path = tmp / "net.prelens"
    prelens.save_model(path, model, B.to_backend(params, backend), metadata={"classes": 3})
    lens, host, meta = prelens.load_model(path)
    assert repr(lens) == repr(model) and meta == {"classes": 3}
    for r, g in zip(_leaves(params), _leaves(host)):
        _assert_same_array(r, g, "numpy", "load_model()")
    lens, moved, _ = prelens.load_model(path, backend=backend)
    for r, g in zip(_leaves(params), _leaves(moved)):
        _assert_same_array(r, g, lib, f'load_model(backend="{backend}")')
    assert_close(predict(model, params, xs), predict(lens, moved, B.to_backend(xs, backend)), "the loaded model")
    f64 = B.to_backend(mlp(8, [16, 3], "tanh", last_activation=None).init(0), backend)
    with pytest.raises(PrelensError, match=r"\[0\]\.weight: expected f32\[8,16\], got f64\[8,16\] \(" + lib):
        prelens.save_model(tmp / "misfit.prelens", model, f64)


def check_resume(backend: str, tmp: Path) -> None:
    """A checkpoint written by ``fit`` is read back for resuming with its parameters in the backend."""
    lib = _lib(backend)
    os.makedirs(tmp, exist_ok=True)
    model, _, xs, labels = _classifier(np.float64)
    path = tmp / "fit.npz"
    result = fit(model, softmax_cross_entropy, (xs, labels), 2, 64, sgd(0.1), 0, progress=False, checkpoint_path=path)
    like = B.to_backend(model.init(0), backend)
    resumed = read_checkpoint(path, like, (), backend=backend)
    for r, g in zip(_leaves(result.params), _leaves(resumed.params)):
        _assert_same_array(r, g, lib, "read_checkpoint(backend=)")
    assert resumed.history.epochs == 2 and resumed.batch == 0


def check_summary(backend: str, tmp: Path) -> None:
    """``summary`` of a model whose parameters are the backend's counts the same parameters."""
    model, params, _, _ = _classifier(np.float64)
    ref = prelens.summary(model, (4, 8), params=params)
    got = prelens.summary(model, (4, 8), params=B.to_backend(params, backend))
    assert got.total_params == ref.total_params == 8 * 16 + 16 + 16 * 3 + 3
    assert [s.name for s in got.stages] == [s.name for s in ref.stages]
    assert [s.count for s in got.stages] == [s.count for s in ref.stages]


CHECKS: list[Callable[[str, Path], None]] = [
    check_predict,
    check_predict_proba,
    check_accuracy_and_confusion,
    check_evaluate,
    check_data,
    check_checkpoint,
    check_model_file,
    check_resume,
    check_summary,
]


# ---------------------------------------------------------------- JAX only: under jit


def check_jit(backend: str, tmp: Path) -> None:
    """``predict`` (whole or chunked) and ``predict_proba`` trace under ``jax.jit``; ``save_checkpoint`` refuses a traced value."""
    import jax

    lib = _lib(backend)
    assert lib == "jax", "check_jit is for JAX"
    model, params, xs, _ = _classifier(np.float64)
    px, xx = prelens.backend.to_backend((params, xs), "jax")
    for name, fn, ref in (
        ("predict", lambda p, x: predict(model, p, x), predict(model, params, xs)),
        ("predict in chunks", lambda p, x: predict(model, p, x, batch_size=64), predict(model, params, xs)),
        ("predict_proba", lambda p, x: predict_proba(model, p, x), predict_proba(model, params, xs)),
    ):
        got = jax.jit(fn)(px, xx)
        assert_in_library(got, "jax", name)
        assert_close(ref, got, f"{name} under jax.jit")
    os.makedirs(tmp, exist_ok=True)

    def saves(p: Tree) -> Any:
        save_checkpoint(tmp / "traced.npz", p)
        return p

    with pytest.raises(prelens.errors.CheckpointError, match=r"\[0\]\.weight: .*being traced \(under jax\.jit\)"):
        jax.jit(saves)(px)
    assert not (tmp / "traced.npz").exists()


JAX_CHECKS: list[Callable[[str, Path], None]] = [check_jit]
