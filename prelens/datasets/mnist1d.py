"""MNIST-1D (Greydanus & Kobak, "Scaling down deep learning with MNIST-1D"): ten digits as 1-D series.

The ``mnist1d`` package (the extra ``pip install 'prelens[mnist1d]'``) generates it from its ten
templates with ``make_dataset(get_dataset_args())``: the paper's 5,000 series of length 40 from seed
42, 4,000 for training and 1,000 for testing; nothing is downloaded. :func:`load_mnist1d` caches the
arrays as a ``.npz`` (read with ``allow_pickle=False``) under :func:`cache_dir`; later calls need no extra.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args
from prelens.datasets._split import Split

__all__ = ["MNIST1D_VERSION", "cache_dir", "load_mnist1d"]

#: The version of the ``mnist1d`` package the extra pins (the generator's code decides the data).
MNIST1D_VERSION = "0.0.2.post1"
#: The cache file's name under :func:`cache_dir`.
MNIST1D_FILE = "mnist1d.npz"

_LENGTH = 40
_N_TRAIN, _N_TEST = 4000, 1000
_KEYS = ("x_train", "y_train", "x_test", "y_test", "t")


def cache_dir() -> Path:
    """Where prelens keeps what it generates: ``$PRELENS_CACHE``, else ``$XDG_CACHE_HOME/prelens``, else
    ``~/.cache/prelens`` (an empty variable counts as unset). The directory is made when first written to.

    >>> import os
    >>> old = os.environ.get("PRELENS_CACHE")
    >>> os.environ["PRELENS_CACHE"] = "/tmp/prelens-cache"
    >>> str(cache_dir())
    '/tmp/prelens-cache'
    >>> _ = os.environ.pop("PRELENS_CACHE") if old is None else os.environ.update(PRELENS_CACHE=old)
    """
    own = os.environ.get("PRELENS_CACHE")
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "prelens"


def load_mnist1d(*, channel: bool = False, regenerate: bool = False) -> Split:
    """MNIST-1D as a :class:`Split`: 4,000 training and 1,000 test series of length 40, float64.

    Shapes: ``x_train (4000, 40)`` and ``x_test (1000, 40)`` (an MLP's rows), or
    with ``channel=True`` ``(4000, 40, 1)`` and ``(1000, 40, 1)``: time on axis 1,
    one channel last, as ``conv1d`` and ``gru`` take them. ``y_train (4000,)``,
    ``y_test (1000,)``: int64 digits 0-9.

    The first call generates it (see the module's docstring; a few seconds, the global random states
    restored) and caches it; later calls read the cache (a damaged file is made anew; ``regenerate=True``
    makes it anyway). Without the package or the file: :class:`~prelens.errors.MissingExtraError`.

    >>> split = load_mnist1d()
    >>> split, split.x_train.shape, load_mnist1d(channel=True).x_test.shape
    (Split(mnist1d: 4000 train + 1000 test, 40 features, 10 classes), (4000, 40), (1000, 40, 1))
    """
    channel = _args.flag("load_mnist1d", "channel", channel)
    regenerate = _args.flag("load_mnist1d", "regenerate", regenerate)
    path = cache_dir() / MNIST1D_FILE
    arrays = None if regenerate else _read(path)
    if arrays is None:
        arrays = _generate()
        _write(path, arrays)
    x_train, x_test = arrays["x_train"], arrays["x_test"]
    if channel:
        x_train, x_test = x_train[..., None], x_test[..., None]
    digits, times = tuple(str(d) for d in range(10)), tuple(f"t={i}" for i in range(_LENGTH))
    return Split("mnist1d", x_train, arrays["y_train"], x_test, arrays["y_test"], digits, times)


def _generate() -> dict[str, npt.NDArray[Any]]:
    """The paper's dataset from the ``mnist1d`` package, the caller's global random states left as they were."""
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise E.missing_extra("load_mnist1d", "mnist1d", "mnist1d") from None
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        data = make_dataset(get_dataset_args())  # seeds Python's and numpy's global generators with 42
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    arrays = {
        "x_train": np.asarray(data["x"], dtype=np.float64),
        "y_train": np.asarray(data["y"], dtype=np.int64),
        "x_test": np.asarray(data["x_test"], dtype=np.float64),
        "y_test": np.asarray(data["y_test"], dtype=np.int64),
        "t": np.asarray(data["t"], dtype=np.float64),
    }
    if not _valid(arrays):
        got = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        expected = f"x_train ({_N_TRAIN}, {_LENGTH}), x_test ({_N_TEST}, {_LENGTH}) finite, labels 0-9"
        raise E.bad_argument("load_mnist1d", "the generated dataset", got, expected)
    return arrays


def _valid(arrays: dict[str, npt.NDArray[Any]]) -> bool:
    """What every MNIST-1D file holds: the shapes and dtypes above, finite series, digits 0-9."""
    try:
        xs, ys, xt, yt = (arrays[k] for k in _KEYS[:4])
    except KeyError:
        return False
    return (
        xs.shape == (_N_TRAIN, _LENGTH)
        and xt.shape == (_N_TEST, _LENGTH)
        and ys.shape == (_N_TRAIN,)
        and yt.shape == (_N_TEST,)
        and xs.dtype == xt.dtype == np.float64
        and ys.dtype == yt.dtype == np.int64
        and bool(np.isfinite(xs).all() and np.isfinite(xt).all())
        and all(bool(((y >= 0) & (y <= 9)).all()) for y in (ys, yt))
    )


def _read(path: Path) -> dict[str, npt.NDArray[Any]] | None:
    """The cached arrays, or None if there is no such file or it is not a whole MNIST-1D file."""
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _KEYS if k in f.files}
    except (OSError, ValueError, EOFError, KeyError):
        return None
    return arrays if _valid(arrays) else None


def _write(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> None:
    """Write the cache atomically (a temporary file beside it, then a rename); a cache that cannot be
    written is no error: the dataset is generated again next time."""
    try:
        made_by = version("mnist1d")
    except PackageNotFoundError:
        made_by = "unknown"
    about = json.dumps({"generator": "mnist1d.data.make_dataset(get_dataset_args())", "mnist1d": made_by})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".mnist1d-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, allow_pickle=False, about=np.array(about), **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass
