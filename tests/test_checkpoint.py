"""Checkpoints: exact round trips, atomic writes, and clear errors for bad files."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import subprocess
import sys
import threading
import tracemalloc
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens.core import tree_paths
from prelens.errors import CheckpointError
from prelens.faithful import Para
from prelens.io import load_checkpoint, load_metadata, register_namedtuple, save_checkpoint
from prelens.learn import adam


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
    save_checkpoint(path, tree)
    assert_same(tree, load_checkpoint(path))
    assert_same(tree, load_checkpoint(path, like=tree))


def test_file_is_a_plain_npz_readable_without_pickle(tmp_path: Path):
    path = tmp_path / "p.npz"
    save_checkpoint(path, [Para(0.5, np.arange(3.0))])
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["[0].bias", "[0].weight", "__prelens__"]
        np.testing.assert_array_equal(archive["[0].weight"], np.arange(3.0))


def test_optimiser_state_round_trips(tmp_path: Path):
    params = [Para(0.0, np.ones(2, np.float32))]
    opt = adam(0.1)
    _, state = opt.update(params, opt.init(params), params)
    save_checkpoint(tmp_path / "s.npz", {"params": params, "opt_state": state})
    assert_same({"params": params, "opt_state": state}, load_checkpoint(tmp_path / "s.npz"))


def test_metadata(tmp_path: Path):
    save_checkpoint(tmp_path / "m.npz", [1.0], metadata={"epoch": 3, "sizes": [4, 1]})
    assert load_metadata(tmp_path / "m.npz") == {"epoch": 3, "sizes": [4, 1]}
    with pytest.raises(CheckpointError, match=r"at metadata: must be JSON-serialisable"):
        save_checkpoint(tmp_path / "n.npz", [1.0], metadata={"bad": object()})
    assert not (tmp_path / "n.npz").exists()
    # numpy's scalars are numbers (a float32 model's loss, an argmax): stored as JSON's, NaN refused as ever
    numbers = {"loss": np.float32(0.5), "best": np.int64(7), "done": np.bool_(True), "all": [np.float16(2)]}
    save_checkpoint(tmp_path / "m.npz", [1.0], metadata=numbers)
    assert load_metadata(tmp_path / "m.npz") == {"loss": 0.5, "best": 7, "done": True, "all": [2.0]}
    with pytest.raises(CheckpointError, match=r"at metadata: must be JSON-serialisable \(Out of range float"):
        save_checkpoint(tmp_path / "n.npz", [1.0], metadata={"loss": np.float32("nan")})
    with pytest.raises(CheckpointError, match=r"at metadata: must be JSON-serialisable \(Object of type ndarray"):
        save_checkpoint(tmp_path / "n.npz", [1.0], metadata={"xs": np.zeros(2)})


def test_a_number_in_like_takes_a_0d_array_of_its_kind_from_the_file(tmp_path: Path):
    """A JAX run's step counter is a 0-d int array where numpy's ``init`` makes an int: ``like`` decides (resuming a
    run trained with ``backend="jax"`` read its AdamState.step as a mismatch)."""
    path = tmp_path / "c.npz"
    save_checkpoint(path, [np.array(3), np.array(4, np.int32), np.array(2.5), np.array([1])])
    out = load_checkpoint(path, like=[0, 0, 0.0, np.array([0])])
    assert out[:3] == [3, 4, 2.5] and [type(x) for x in out[:3]] == [int, int, float]  # a numpy scalar is no array
    for like, got in [([0.0, 0, 0.0, np.array([0])], r"expected float, got i64\[\]"),
                      ([0, 0, 0, np.array([0])], r"\[2\]: expected int, got f64\[\]"),
                      ([0, 0, 0.0, 0], r"\[3\]: expected int, got i64\[1\]")]:  # fmt: skip
        with pytest.raises(CheckpointError, match=got):
            load_checkpoint(path, like=like)


def test_a_dict_with_its_keys_in_another_order_is_told_apart(tmp_path: Path):
    """Trees are ordered (a dict's keys too): the refusal says so, not 'expected keys [a, b], got keys [a, b]'."""
    save_checkpoint(tmp_path / "d.npz", {"a": np.ones(2), "b": 1.0})
    with pytest.raises(
        CheckpointError, match=r"at <root>: expected dict keys in the order \['b', 'a'\], got \['a', 'b'\]"
    ):
        load_checkpoint(tmp_path / "d.npz", like={"b": 0.0, "a": np.zeros(2)})


# --------------------------------------------------------------- bad files


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "params.npz"
    save_checkpoint(path, [Para(0.25, np.linspace(0, 1, 1000).astype(np.float32)), (np.eye(3),)])
    return path


def test_missing_file(tmp_path: Path):
    with pytest.raises(CheckpointError, match=r"nowhere\.npz: cannot be read: no such file"):
        load_checkpoint(tmp_path / "nowhere.npz")


def test_truncated_file(saved: Path):
    data = saved.read_bytes()
    saved.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"params\.npz: cannot be read: not a valid \.npz archive"):
        load_checkpoint(saved)


def test_corrupt_leaf_data_is_caught_by_the_crc(saved: Path):
    data = bytearray(saved.read_bytes())
    marker = np.linspace(0, 1, 1000).astype(np.float32).tobytes()[2000:2016]
    at = bytes(data).index(marker)
    data[at : at + 16] = b"\xff" * 16
    saved.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"cannot be read: the array for \[0\]\.weight is corrupt"):
        load_checkpoint(saved)


def test_garbage_file(tmp_path: Path):
    path = tmp_path / "g.npz"
    path.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(CheckpointError, match=r"cannot be read: not a valid \.npz archive"):
        load_checkpoint(path)


def test_foreign_npz_and_pickled_arrays(tmp_path: Path):
    np.savez(tmp_path / "plain.npz", w=np.ones(2))
    with pytest.raises(CheckpointError, match=r"no __prelens__ entry"):
        load_checkpoint(tmp_path / "plain.npz")
    # an object array would need pickle to load: refused, never unpickled
    with zipfile.ZipFile(tmp_path / "evil.npz", "w") as z:
        with z.open("__prelens__.npy", "w") as f:
            np.lib.format.write_array(f, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(CheckpointError, match=r"the array for __prelens__ is corrupt .*allow_pickle"):
        load_checkpoint(tmp_path / "evil.npz")


def test_header_not_matching_data_is_corrupt(tmp_path: Path):
    path = tmp_path / "h.npz"
    save_checkpoint(path, [np.zeros(2)])
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays["[0]"] = np.zeros(3)
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match=r"at \[0\]: the header says f64\[2\], the data is f64\[3\]"):
        load_checkpoint(path)


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
    save_checkpoint(path, other)
    with pytest.raises(CheckpointError, match=r"other\.npz does not fit the model: " + match):
        load_checkpoint(path, like=MODEL)


def test_named_tuples_are_never_imported_from_the_file(tmp_path: Path):
    path = tmp_path / "u.npz"
    tree = [Unregistered(1.0, np.ones(2))]
    save_checkpoint(path, tree)
    with pytest.raises(
        CheckpointError, match=r"at \[0\]: named tuple tests\.test_checkpoint\.Unregistered is not registered"
    ):
        load_checkpoint(path)
    assert_same(load_checkpoint(path, like=tree), tree)  # like= supplies the class
    register_namedtuple(Unregistered)
    assert_same(load_checkpoint(path), tree)


def test_unsupported_leaves_are_refused_before_writing(tmp_path: Path):
    with pytest.raises(
        CheckpointError, match=r"cannot save a checkpoint: at \[1\]\['f'\]: cannot store a leaf of type set"
    ):
        save_checkpoint(tmp_path / "x.npz", [1.0, {"f": {1, 2}}])
    with pytest.raises(CheckpointError, match=r"at \[0\]: arrays of dtype object are not supported"):
        save_checkpoint(tmp_path / "x.npz", [np.array([None])])
    with pytest.raises(CheckpointError, match=r"at \[0\]: int 9223372036854775808 does not fit in int64"):
        save_checkpoint(tmp_path / "x.npz", [2**63])
    with pytest.raises(CheckpointError, match=r"at <root>: dict keys must be str or int"):
        save_checkpoint(tmp_path / "x.npz", {(1, 2): 3.0})
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
        save_checkpoint(saved, [np.ones(5), np.ones(5)])
    assert len(calls) == 2  # the failure really happened midway
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == ["params.npz"]  # no temporary file left behind


def test_failed_fsync_leaves_the_old_file_untouched(saved: Path, monkeypatch: pytest.MonkeyPatch):
    before = saved.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint"):
        save_checkpoint(saved, [np.ones(5)])
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == ["params.npz"]


def test_a_path_that_cannot_be_a_file_is_refused_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A directory, a missing directory or a file taken for one: refused by name before any byte is written (no
    temporary file in the parent, no message naming one)."""
    (tmp_path / "plain").write_text("x")
    monkeypatch.setattr(np.lib.format, "write_array", None)  # writing anything would fail differently
    for target, why in [
        (tmp_path, "it is a directory"),
        (tmp_path / "missing" / "c.npz", "the directory .*missing does not exist"),
        (tmp_path / "plain" / "c.npz", ".*plain is not a directory"),
    ]:
        with pytest.raises(CheckpointError, match=rf"^cannot write checkpoint {target}: {why}; nothing was written$"):
            save_checkpoint(target, [np.ones(3)])
    assert os.listdir(tmp_path) == ["plain"]


def test_save_replaces_and_keeps_the_exact_name(tmp_path: Path):
    path = tmp_path / "weights"  # no suffix added
    save_checkpoint(path, [1.0])
    save_checkpoint(path, [2.0])
    assert load_checkpoint(path) == [2.0]
    assert os.listdir(tmp_path) == ["weights"]


def test_paths_name_every_leaf(tmp_path: Path):
    tree = {"enc": [Para(0.0, np.ones(2))], 3: (np.int32(7),)}
    save_checkpoint(tmp_path / "p.npz", tree)
    with np.load(tmp_path / "p.npz") as archive:
        stored = set(archive.files) - {"__prelens__"}
    assert stored == {p for p, _ in tree_paths(tree)}


def test_saved_files_get_the_usual_permissions(tmp_path: Path):
    umask = os.umask(0o022)
    os.umask(umask)
    save_checkpoint(tmp_path / "p.npz", [1.0])
    assert (tmp_path / "p.npz").stat().st_mode & 0o777 == 0o666 & ~umask


# --------------------------------------------- Ctrl-C, threads and killed writers (issue 13)


def signal_inside_member_close(monkeypatch: pytest.MonkeyPatch, *, real_signal: bool) -> list[int]:
    """On the first ZIP member's close inside a save: a real SIGINT, or a KeyboardInterrupt raised there.

    Either lands between a member's data and its closing, where zipfile refuses to close the
    archive afterwards (``ValueError: ... open writing handle``) unless the save_checkpoint guards it.
    """
    real = zipfile._ZipWriteFile.close
    calls: list[int] = []

    def close(self: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            if real_signal:
                signal.raise_signal(signal.SIGINT)  # the handler runs before raise_signal returns
            else:
                raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(zipfile._ZipWriteFile, "close", close)
    return calls


def test_ctrl_c_inside_save_is_acted_on_once_the_file_is_whole(saved: Path, monkeypatch: pytest.MonkeyPatch):
    calls = signal_inside_member_close(monkeypatch, real_signal=True)
    tree = [np.arange(5.0), {"b": np.ones(3)}]
    with pytest.raises(KeyboardInterrupt):  # never zipfile's ValueError
        save_checkpoint(saved, tree)
    assert calls
    monkeypatch.undo()
    assert_same(load_checkpoint(saved), tree)  # the new file, whole
    assert os.listdir(saved.parent) == ["params.npz"]


def test_an_exception_inside_a_member_write_abandons_the_file_cleanly(saved: Path, monkeypatch: pytest.MonkeyPatch):
    before = saved.read_bytes()
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    signal_inside_member_close(monkeypatch, real_signal=False)
    with pytest.raises(KeyboardInterrupt):  # the real exception, not "Can't close the ZIP file"
        save_checkpoint(saved, [np.ones(5)])
    gc.collect()
    assert unraisable == []  # nor a complaint when the abandoned archive is collected
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == ["params.npz"]


def test_save_and_load_from_another_thread(tmp_path: Path):
    """Signals cannot be deferred outside the main thread (nor do they arrive there): saving just works."""
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            save_checkpoint(tmp_path / f"t{i}.npz", {"w": np.full(100, float(i))})
            assert load_checkpoint(tmp_path / f"t{i}.npz")["w"][0] == i
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


WRITER = """
import os, sys, numpy as np
import prelens.io._checkpoint as ck
real_fsync, paused = os.fsync, []
def fsync(fd):
    if not paused:  # the first fsync: of the temporary file, open, written and locked
        paused.append(1)
        print("writing", flush=True)
        sys.stdin.readline()  # wait here until told to go on (or be killed)
    real_fsync(fd)
ck.os.fsync = fsync
ck.save_checkpoint(sys.argv[1], {"w": np.full(1000, float(sys.argv[2]))})
print("saved", flush=True)
"""


def start_writer(path: Path, value: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(value)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return proc


def temporaries(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="flock and SIGKILL: Unix")
def test_a_save_cleans_up_after_a_killed_one_and_never_touches_a_live_writers_file(tmp_path: Path):
    import fcntl

    path = tmp_path / "p.npz"
    killed, live = start_writer(path, 1), start_writer(path, 2)
    try:
        for proc in (killed, live):
            assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        killed.kill()  # SIGKILL in the middle of a save
        killed.wait(timeout=30)
        left = [n for n in temporaries(tmp_path) if f".{killed.pid}." in n]
        writing = [n for n in temporaries(tmp_path) if f".{live.pid}." in n]
        assert len(left) == 1 and len(writing) == 1
        # a leftover named after a dead pid but locked by someone (a writer elsewhere): kept
        locked = tmp_path / f".p.npz.{killed.pid}.0badf00d.tmp"
        locked.write_bytes(b"x")
        # a leftover of a live pid (a writer between creating its file and locking it): kept
        unlocked_live = tmp_path / f".p.npz.{os.getpid()}.0000beef.tmp"
        unlocked_live.write_bytes(b"x")
        other = tmp_path / f".q.npz.{killed.pid}.00000000.tmp"  # another target's: kept
        other.write_bytes(b"x")
        with open(locked, "rb") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            save_checkpoint(path, {"w": np.zeros(3)})
        assert temporaries(tmp_path) == sorted([writing[0], locked.name, unlocked_live.name, other.name])
        assert live.stdin is not None
        live.stdin.write("go\n")
        live.stdin.flush()
        out, err = live.communicate(timeout=30)
        assert live.returncode == 0 and out.strip() == "saved", err  # its file was never touched
        assert load_checkpoint(path)["w"][0] == 2.0
    finally:
        for proc in (killed, live):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --------------------------------------------------------- hostile files (issue 13)


def rewrite(path: Path, header_text: str | None = None, members: dict[str, bytes] | None = None) -> None:
    """Rewrite a saved checkpoint with another ``__prelens__`` text and/or other members (stored)."""
    with zipfile.ZipFile(path) as z:
        content = {n: z.read(n) for n in z.namelist()}
    if header_text is not None:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array(header_text))
        content["__prelens__.npy"] = buf.getvalue()
    content.update(members or {})
    with zipfile.ZipFile(path, "w") as z:
        for name, data in content.items():
            z.writestr(name, data)


def header_of(path: Path) -> dict[str, Any]:
    with np.load(path) as archive:
        result: dict[str, Any] = json.loads(str(archive["__prelens__"][()]))
    return result


def peak_bytes(thunk: Any) -> int:
    """The peak of memory traced (numpy's buffers included) while ``thunk`` runs."""
    tracemalloc.start()
    try:
        thunk()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def refused(thunk: Any, match: str) -> int:
    """Run ``thunk``, expect a CheckpointError matching ``match``; the peak memory it took."""

    def run() -> None:
        with pytest.raises(CheckpointError, match=match):
            thunk()

    return peak_bytes(run)


def test_a_description_declaring_a_huge_shape_is_refused_before_allocating(tmp_path: Path):
    path = tmp_path / "h.npz"
    save_checkpoint(path, {"w": np.zeros(2)})
    header = header_of(path)
    header["tree"]["children"][0]["shape"] = [10**13]
    rewrite(path, json.dumps(header))
    peak = refused(
        lambda: load_checkpoint(path), r"at \['w'\]: the header says f64\[10000000000000\], the data is f64\[2\]"
    )
    assert peak < 2**20
    like = {"w": np.zeros(2)}
    peak = refused(lambda: load_checkpoint(path, like=like), r"does not fit the model: at \['w'\]: expected f64\[2\]")
    assert peak < 2**20


def test_an_array_header_declaring_more_than_the_file_holds_is_refused_before_allocating(tmp_path: Path):
    path = tmp_path / "h.npz"
    save_checkpoint(path, {"w": np.zeros(2)})
    header = header_of(path)
    header["tree"]["children"][0]["shape"] = [10**9]
    big = io.BytesIO()
    np.lib.format.write_array_header_1_0(big, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)})
    rewrite(path, json.dumps(header), {"['w'].npy": big.getvalue() + bytes(16)})
    peak = refused(lambda: load_checkpoint(path), r"the array for \['w'\] is shorter than its header says")
    assert peak < 2**20


def test_zip_sizes_that_lie_are_checked_against_the_file(tmp_path: Path):
    """The archive's entries claim 3.2 GB (stored) in a file of a few hundred bytes, as the .npy header does."""
    rows = 400_000_000
    path = tmp_path / "z.npz"
    save_checkpoint(path, {"w": np.zeros(2)})
    header = header_of(path)
    header["tree"]["children"][0]["shape"] = [rows]
    big = io.BytesIO()
    np.lib.format.write_array_header_1_0(big, {"descr": "<f8", "fortran_order": False, "shape": (rows,)})
    rewrite(path, json.dumps(header), {"['w'].npy": big.getvalue()})
    data = bytearray(path.read_bytes())
    size = len(big.getvalue()).to_bytes(4, "little")
    claimed = (len(big.getvalue()) + 8 * rows).to_bytes(4, "little")
    spots = [i for i in range(len(data)) if data[i : i + 8] == size + size]  # compressed and file size, twice
    assert len(spots) == 2
    for at in spots:
        data[at : at + 8] = claimed + claimed
    path.write_bytes(bytes(data))
    peak = refused(lambda: load_checkpoint(path), r"cannot be read: the array for \['w'\]")  # claims bytes past the end
    assert peak < 2**20
    model = {"w": np.broadcast_to(np.zeros(1), (rows,))}  # a model of that size (a view: no memory)
    peak = refused(
        lambda: load_checkpoint(path, like=model), r"the array for \['w'\] claims \d+ bytes, past the end of the file"
    )
    assert peak < 2**20


BOMB_ROWS = 187_500_000  # 1.5 GB of float64 zeros, deflated to about 1.5 MB


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint whose one array inflates from 1.5 MB to 1.5 GB (deflate, built without inflating it)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    save_checkpoint(path, {"w": np.zeros(128)})
    header = header_of(path)
    header["tree"]["children"][0]["shape"] = [BOMB_ROWS]
    rewrite(path, json.dumps(header))
    with zipfile.ZipFile(path) as z:
        keep = z.read("__prelens__.npy")
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "<f8", "fortran_order": False, "shape": (BOMB_ROWS,)})
    head, mib = npy.getvalue(), 2**20
    zeros = bytes(mib)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = squeeze.compress(head) + squeeze.flush(zlib.Z_FULL_FLUSH)
    block = squeeze.compress(zeros) + squeeze.flush(zlib.Z_FULL_FLUSH)  # each MiB of zeros deflates alike
    n_blocks, tail = divmod(8 * BOMB_ROWS, mib)
    last = squeeze.compress(bytes(tail)) + squeeze.flush()
    stream = first + block * n_blocks + last
    crc = zlib.crc32(head)
    for _ in range(n_blocks):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(tail), crc)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("__prelens__.npy", keep)
        info = zipfile.ZipInfo("['w'].npy")
        info.compress_type, info.CRC = zipfile.ZIP_DEFLATED, crc
        info.compress_size, info.file_size = len(stream), len(head) + 8 * BOMB_ROWS
        assert z.fp is not None
        info.header_offset = z.fp.tell()
        z.fp.write(info.FileHeader(zip64=False))
        z.fp.write(stream)
        z.filelist.append(info)
        z.NameToInfo[info.filename] = info
        z.start_dir = z.fp.tell()
    assert path.stat().st_size < 1.6e6
    return path


def test_a_decompression_bomb_is_refused_with_little_memory(bomb: Path):
    small_model = {"w": np.zeros(128)}  # 1 KiB
    peak = refused(
        lambda: load_checkpoint(bomb, like=small_model), r"does not fit the model: at \['w'\]: expected f64\[128\]"
    )
    assert peak < 8 * 2**20
    peak = refused(
        lambda: load_checkpoint(bomb), r"the array for \['w'\] would take the data read past 16 times the file's size"
    )
    assert peak < 8 * 2**20


def test_a_bomb_that_matches_the_description_and_the_model_is_refused_too(bomb: Path, tmp_path: Path):
    """The description says 128 rows (as the model), the array's own header 1.5 GB: refused before reading."""
    path = tmp_path / "b.npz"
    path.write_bytes(bomb.read_bytes())
    header = header_of(path)
    header["tree"]["children"][0]["shape"] = [128]
    with zipfile.ZipFile(path) as z:
        entry = z.getinfo("['w'].npy")
    # replace the header member only (append a new one; zipfile reads the last entry of a name)
    with zipfile.ZipFile(path, "a") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name"
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array(json.dumps(header)))
        z.writestr("__prelens__.npy", buf.getvalue())
    assert entry.file_size > 1e9
    peak = refused(
        lambda: load_checkpoint(path, like={"w": np.zeros(128)}),
        r"at \['w'\]: the header says f64\[128\], the data is f64\[187500000\]",
    )
    assert peak < 8 * 2**20


def test_compressed_checkpoints_of_honest_size_still_load(tmp_path: Path):
    path = tmp_path / "c.npz"
    tree = {"w": np.linspace(0, 1, 5000), "b": [np.zeros(3), 2.5]}
    save_checkpoint(path, tree)
    with np.load(path) as archive:
        np.savez_compressed(path, **{k: archive[k] for k in archive.files})
    assert_same(load_checkpoint(path), tree)
    assert_same(load_checkpoint(path, like=tree), tree)


def nested_header(levels: int) -> str:
    """A header whose tree is a list nested ``levels`` deep (written as text: no recursion needed)."""
    tree = '{"kind": "list", "children": [' * levels + '{"kind": "none"}' + "]}" * levels
    return '{"format": "prelens-checkpoint", "version": 1, "metadata": {}, "tree": ' + tree + "}"


@pytest.mark.parametrize("levels", [300, 5000])
def test_a_deeply_nested_header_is_refused(tmp_path: Path, levels: int):
    path = tmp_path / "deep.npz"
    save_checkpoint(path, [])
    rewrite(path, nested_header(levels))
    with pytest.raises(CheckpointError, match=r"nested (more than 100 levels deep|too deeply)"):
        load_checkpoint(path)
    with (
        pytest.raises(CheckpointError, match=r"nested (more than 100 levels deep|too deeply)")
        if levels > 900
        else contextlib.nullcontext()
    ):
        load_metadata(path)


def test_deeply_nested_metadata_is_refused_on_load(tmp_path: Path):
    path = tmp_path / "deep.npz"
    save_checkpoint(path, [])
    header = (
        '{"format": "prelens-checkpoint", "version": 1, "tree": {"kind": "list", "children": []}, "metadata": {"a": '
        + "[" * 300
        + "]" * 300
        + "}}"
    )
    rewrite(path, header)
    with pytest.raises(CheckpointError, match=r"the metadata is nested more than 100 levels deep"):
        load_metadata(path)


def nested_list(levels: int) -> Any:
    tree: Any = []
    for _ in range(levels - 1):
        tree = [tree]
    return tree


def test_saving_a_deeply_nested_tree_or_metadata_is_refused(tmp_path: Path):
    with pytest.raises(
        CheckpointError,
        match=r"cannot save a checkpoint: at (\[0\]){100}: the tree is nested more than 100 levels deep",
    ):
        save_checkpoint(tmp_path / "d.npz", nested_list(2000))
    with pytest.raises(CheckpointError, match=r"at metadata: nested more than 100 levels deep"):
        save_checkpoint(tmp_path / "d.npz", [], metadata={"a": nested_list(2000)})
    assert os.listdir(tmp_path) == []


def test_the_depth_limit_is_exactly_100_levels(tmp_path: Path):
    path = tmp_path / "d.npz"
    save_checkpoint(path, nested_list(100), metadata={"a": nested_list(99)})
    assert load_checkpoint(path) == nested_list(100) and load_checkpoint(path, like=nested_list(100)) == nested_list(
        100
    )
    assert load_metadata(path) == {"a": nested_list(99)}
    rewrite(path, nested_header(100))
    expected: Any = None
    for _ in range(100):
        expected = [expected]
    assert load_checkpoint(path) == expected
    rewrite(path, nested_header(101))
    with pytest.raises(CheckpointError, match=r"at (\[0\]){100}: the tree is nested more than 100 levels deep"):
        load_checkpoint(path)
    path = tmp_path / "d.npz"
    save_checkpoint(path, nested_list(100), metadata={"a": nested_list(99)})
    with pytest.raises(CheckpointError, match=r"nested more than 100 levels deep"):
        save_checkpoint(path, nested_list(101))
    with pytest.raises(CheckpointError, match=r"nested more than 100 levels deep"):
        save_checkpoint(path, [], metadata={"a": nested_list(100)})
