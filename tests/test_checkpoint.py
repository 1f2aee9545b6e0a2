"""Checkpoints: exact round trips, atomic writes, and clear errors for bad files."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import CheckpointError, tree_paths
from prelens.checkpoint import load, load_metadata, register_namedtuple, save
from prelens.nn import Para
from prelens.optim import adam


class Unregistered(NamedTuple):
    a: Any
    b: Any


@register_namedtuple
class Registered(NamedTuple):
    gain: Any
    shift: Any


LEAF_DTYPES = ["float32", "float64", "int64", "int32", "bool", "complex128", "uint8"]


@st.composite
def leaves(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["array", "npscalar", "float", "int", "bool", "str"]))
    if kind == "float":
        return draw(st.floats(allow_nan=True, allow_infinity=True))
    if kind == "int":
        return draw(st.integers(-(2**63), 2**63 - 1))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "str":
        return draw(st.text(max_size=5))
    dtype = np.dtype(draw(st.sampled_from(LEAF_DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arr = (rng.standard_normal(shape) * 100).astype(dtype)
    if dtype.kind == "f" and arr.size and draw(st.booleans()):
        arr.flat[0] = np.nan  # NaN must survive bit for bit too
    return arr if kind == "array" else arr.dtype.type(arr.flat[0] if arr.size else 0)


def _nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(st.text(max_size=4), st.integers(-5, 5))
    return st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3),
        st.dictionaries(keys, children, max_size=3),
        st.tuples(children, children).map(lambda t: Para(*t)),
        st.tuples(children, children).map(lambda t: Registered(*t)),
    )


trees = st.recursive(leaves() | st.just(()) | st.just(None) | st.just([]), _nodes, max_leaves=10)


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Bit-exact equality of structure, node and leaf types, dtypes and values."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), path
    elif isinstance(a, float):
        assert a == b or (a != a and b != b), path
    else:
        assert a == b, path


@given(tree=trees)
def test_round_trip_is_exact(tmp_path_factory: pytest.TempPathFactory, tree: Any):
    path = tmp_path_factory.mktemp("ck") / "t.npz"
    save(path, tree)
    assert_same(tree, load(path))
    assert_same(tree, load(path, like=tree))


def test_file_is_a_plain_npz_readable_without_pickle(tmp_path: Path):
    path = tmp_path / "p.npz"
    save(path, [Para(0.5, np.arange(3.0))])
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["[0].bias", "[0].weight", "__prelens__"]
        np.testing.assert_array_equal(archive["[0].weight"], np.arange(3.0))


def test_optimiser_state_round_trips(tmp_path: Path):
    params = [Para(0.0, np.ones(2, np.float32))]
    opt = adam(0.1)
    _, state = opt.update(params, opt.init(params), params)
    save(tmp_path / "s.npz", {"params": params, "opt_state": state})
    assert_same({"params": params, "opt_state": state}, load(tmp_path / "s.npz"))


def test_metadata(tmp_path: Path):
    save(tmp_path / "m.npz", [1.0], metadata={"epoch": 3, "sizes": [4, 1]})
    assert load_metadata(tmp_path / "m.npz") == {"epoch": 3, "sizes": [4, 1]}
    with pytest.raises(CheckpointError, match=r"at metadata: must be JSON-serialisable"):
        save(tmp_path / "n.npz", [1.0], metadata={"bad": object()})
    assert not (tmp_path / "n.npz").exists()


# --------------------------------------------------------------- bad files


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "params.npz"
    save(path, [Para(0.25, np.linspace(0, 1, 1000).astype(np.float32)), (np.eye(3),)])
    return path


def test_missing_file(tmp_path: Path):
    with pytest.raises(CheckpointError, match=r"nowhere\.npz: cannot be read: no such file"):
        load(tmp_path / "nowhere.npz")


def test_truncated_file(saved: Path):
    data = saved.read_bytes()
    saved.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"params\.npz: cannot be read: not a valid \.npz archive"):
        load(saved)


def test_corrupt_leaf_data_is_caught_by_the_crc(saved: Path):
    data = bytearray(saved.read_bytes())
    marker = np.linspace(0, 1, 1000).astype(np.float32).tobytes()[2000:2016]
    at = bytes(data).index(marker)
    data[at : at + 16] = b"\xff" * 16
    saved.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"cannot be read: the array for \[0\]\.weight is corrupt"):
        load(saved)


def test_garbage_file(tmp_path: Path):
    path = tmp_path / "g.npz"
    path.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(CheckpointError, match=r"cannot be read: not a valid \.npz archive"):
        load(path)


def test_foreign_npz_and_pickled_arrays(tmp_path: Path):
    np.savez(tmp_path / "plain.npz", w=np.ones(2))
    with pytest.raises(CheckpointError, match=r"no __prelens__ entry"):
        load(tmp_path / "plain.npz")
    # an object array would need pickle to load: refused, never unpickled
    with zipfile.ZipFile(tmp_path / "evil.npz", "w") as z:
        with z.open("__prelens__.npy", "w") as f:
            np.lib.format.write_array(f, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(CheckpointError, match=r"the array for __prelens__ is corrupt .*allow_pickle"):
        load(tmp_path / "evil.npz")


def test_header_not_matching_data_is_corrupt(tmp_path: Path):
    path = tmp_path / "h.npz"
    save(path, [np.zeros(2)])
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["[0]"] = np.zeros(3)
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match=r"at \[0\]: the header says f64\[2\], the data is f64\[3\]"):
        load(path)


# ------------------------------------------------------------- wrong model

MODEL = [Para(0.0, np.zeros((3, 4), np.float32)), (np.zeros(4), 1.0)]


@pytest.mark.parametrize(
    ("other", "match"),
    [
        (
            [Para(0.0, np.zeros((4, 3), np.float32)), (np.zeros(4), 1.0)],
            r"at \[0\]\.weight: expected f32\[3,4\], got f32\[4,3\]",
        ),
        (
            [Para(0.0, np.zeros((3, 4), np.float64)), (np.zeros(4), 1.0)],
            r"at \[0\]\.weight: expected f32\[3,4\], got f64\[3,4\]",
        ),
        ([Para(0.0, np.zeros((3, 4), np.float32)), (np.zeros(4),)], r"at \[1\]: expected tuple of 2, got tuple of 1"),
        (
            [Para(0.0, np.zeros((3, 4), np.float32)), (np.zeros(4), np.float64(1.0))],
            r"at \[1\]\[1\]: expected float, got f64 scalar",
        ),
        ([(0.0, np.zeros((3, 4), np.float32)), (np.zeros(4), 1.0)], r"at \[0\]: expected Para, got tuple of 2"),
        (
            [Registered(0.0, np.zeros((3, 4), np.float32)), (np.zeros(4), 1.0)],
            r"at \[0\]: expected Para, got Registered",
        ),
        ({"w": 1}, r"at <root>: expected list of 2, got dict"),
    ],
)
def test_wrong_model_names_the_path(tmp_path: Path, other: Any, match: str):
    path = tmp_path / "other.npz"
    save(path, other)
    with pytest.raises(CheckpointError, match=r"other\.npz does not fit the model: " + match):
        load(path, like=MODEL)


def test_named_tuples_are_never_imported_from_the_file(tmp_path: Path):
    path = tmp_path / "u.npz"
    tree = [Unregistered(1.0, np.ones(2))]
    save(path, tree)
    with pytest.raises(
        CheckpointError, match=r"at \[0\]: named tuple tests\.test_checkpoint\.Unregistered is not registered"
    ):
        load(path)
    assert_same(load(path, like=tree), tree)  # like= supplies the class
    register_namedtuple(Unregistered)
    assert_same(load(path), tree)


def test_unsupported_leaves_are_refused_before_writing(tmp_path: Path):
    with pytest.raises(
        CheckpointError, match=r"cannot save a checkpoint: at \[1\]\['f'\]: cannot store a leaf of type set"
    ):
        save(tmp_path / "x.npz", [1.0, {"f": {1, 2}}])
    with pytest.raises(CheckpointError, match=r"at \[0\]: arrays of dtype object are not supported"):
        save(tmp_path / "x.npz", [np.array([None])])
    with pytest.raises(CheckpointError, match=r"at \[0\]: int 9223372036854775808 does not fit in int64"):
        save(tmp_path / "x.npz", [2**63])
    with pytest.raises(CheckpointError, match=r"at <root>: dict keys must be str or int"):
        save(tmp_path / "x.npz", {(1, 2): 3.0})
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ atomic writes


def test_failed_save_leaves_the_old_file_untouched(saved: Path, monkeypatch: pytest.MonkeyPatch):
    before = saved.read_bytes()
    calls = []
    real = np.lib.format.write_array

    def fail_on_second_array(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", fail_on_second_array)
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint .*params\.npz: OSError: .*No space left"):
        save(saved, [np.ones(5), np.ones(5)])
    assert len(calls) == 2  # the failure really happened midway
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == ["params.npz"]  # no temporary file left behind


def test_failed_fsync_leaves_the_old_file_untouched(saved: Path, monkeypatch: pytest.MonkeyPatch):
    before = saved.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint"):
        save(saved, [np.ones(5)])
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == ["params.npz"]


def test_save_replaces_and_keeps_the_exact_name(tmp_path: Path):
    path = tmp_path / "weights"  # no suffix added
    save(path, [1.0])
    save(path, [2.0])
    assert load(path) == [2.0]
    assert os.listdir(tmp_path) == ["weights"]


def test_paths_name_every_leaf(tmp_path: Path):
    tree = {"enc": [Para(0.0, np.ones(2))], 3: (np.int32(7),)}
    save(tmp_path / "p.npz", tree)
    with np.load(tmp_path / "p.npz") as archive:
        stored = set(archive.files) - {"__prelens__"}
    assert stored == {p for p, _ in tree_paths(tree)}


def test_saved_files_get_the_usual_permissions(tmp_path: Path):
    umask = os.umask(0o022)
    os.umask(umask)
    save(tmp_path / "p.npz", [1.0])
    assert (tmp_path / "p.npz").stat().st_mode & 0o777 == 0o666 & ~umask
