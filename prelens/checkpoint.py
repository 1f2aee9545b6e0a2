"""Checkpoints: parameter trees to ``.npz`` files and back, without pickle.

A checkpoint is an ordinary ``.npz`` archive (readable by ``numpy.load`` with
``allow_pickle=False``) holding

* one array per leaf, keyed by the leaf's tree path (``[0][1].weight``);
* ``__prelens__``: a JSON string describing the tree: node kinds (tuple, list,
  dict, named tuple, ``None``), Python ``float``/``int``/``bool``/``str``
  leaves versus arrays, every leaf's dtype and shape, and optional metadata.

:func:`save` writes atomically: a temporary file in the same directory, flushed
and fsynced, then ``os.replace``; a failed save leaves the file that was there
untouched. :func:`load` raises :class:`prelens.CheckpointError` for a missing,
truncated or corrupt file, and, given ``like=`` (a tree of the model's
parameters), for a file that belongs to another model, naming the tree path of
the first difference in structure, shape or dtype.

Named tuples are rebuilt without importing anything named in the file: from
the types in ``like=`` when it is given, otherwise from a registry of allowed
classes (prelens's own, such as ``prelens.nn.Para`` and the optimiser states,
plus any registered with :func:`register_namedtuple`).

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "params.npz")
>>> save(path, [(np.float32([1, 2]), 0.5), {"steps": 3}])
>>> load(path)
[(array([1., 2.], dtype=float32), 0.5), {'steps': 3}]
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from . import _errors as E

Tree = Any
T = TypeVar("T", bound=type)

__all__ = ["load", "load_metadata", "register_namedtuple", "save"]

_HEADER = "__prelens__"
_FORMAT = "prelens-checkpoint"
_VERSION = 1

_registry: dict[str, type] = {}

#: ``numpy.savez`` seen as taking any keywords (its stubs also type ``allow_pickle`` there).
_savez: Callable[..., None] = np.savez


def register_namedtuple(cls: T) -> T:
    """Allow :func:`load` to rebuild the named tuple class ``cls`` (usable as a decorator).

    Haskell::

        register_namedtuple :: Type t -> IO (Type t)

    Returns ``cls`` itself.

    >>> from typing import NamedTuple
    >>> @register_namedtuple
    ... class Scale(NamedTuple):
    ...     gain: float
    >>> Scale(2.0)
    Scale(gain=2.0)
    """
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise E.bad_argument("register_namedtuple", "cls", cls, "a NamedTuple class")
    _registry[_qualified(cls)] = cls
    return cls


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _known_namedtuples() -> dict[str, type]:
    """The registry plus the named tuples prelens itself exports (imported by fixed name)."""
    import prelens.nn
    import prelens.optim

    known: dict[str, type] = {}
    for module in (prelens.optim, prelens.nn):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields"):
                known[_qualified(value)] = value
    known.update(_registry)
    return known


# ------------------------------------------------------------------ save


def save(path: str | os.PathLike[str], tree: Tree, *, metadata: Mapping[str, Any] | None = None) -> None:
    """Write ``tree`` (and JSON-able ``metadata``) to ``path`` atomically.

    Haskell::

        save :: FilePath -> Tree -> Metadata -> IO ()

    The file is written exactly at ``path`` (no suffix is added). Leaves may
    be numpy arrays of bool/int/uint/float/complex dtypes, numpy scalars, and
    Python ``float``, ``int``, ``bool``, ``str``; nodes tuples, lists, named
    tuples, dicts with ``str`` or ``int`` keys, and ``None``.

    Raises :class:`prelens.CheckpointError` for anything else (naming the
    path in the tree) and when writing fails; either way the file that was
    at ``path`` stays as it was.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save(path, {"w": np.eye(2)}, metadata={"epoch": 3})
    >>> load_metadata(path)
    {'epoch': 3}
    """
    try:
        target = os.fspath(path)
    except TypeError:
        raise E.bad_argument("save", "path", path, "a file path (str or os.PathLike)") from None
    if metadata is not None and not isinstance(metadata, Mapping):
        raise E.checkpoint_unsupported("metadata", f"must be a mapping (a dict), got {E.describe(metadata)}")
    arrays: dict[str, np.ndarray] = {}
    spec = _encode(tree, "", arrays)
    header = {"format": _FORMAT, "version": _VERSION, "tree": spec, "metadata": dict(metadata or {})}
    try:
        text = json.dumps(header, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise E.checkpoint_unsupported("metadata", f"must be JSON-serialisable ({err})") from None
    arrays[_HEADER] = np.array(text)
    _write_atomically(target, arrays)


def _write_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    tmp_name = None
    try:
        fd, tmp_name = _create_temporary(directory, os.path.basename(path))
        with os.fdopen(fd, "wb") as f:
            _savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
        _fsync_directory(directory)
    except OSError as err:
        raise E.checkpoint_write_failed(path, f"{type(err).__name__}: {err}") from err
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _create_temporary(directory: str, base: str) -> tuple[int, str]:
    """A new file next to the target, created exclusively with the usual permissions (umask applies)."""
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.path.join(directory, f".{base}.*.tmp"))


def _fsync_directory(directory: str) -> None:
    """Make the rename durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_SCALARS: dict[type, str] = {bool: "bool", int: "int", float: "float"}


def _encode(x: Any, path: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The JSON spec of ``x``; leaves go into ``arrays`` under their path."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        cls = type(x)
        children = [_encode(v, f"{path}.{f}", arrays) for f, v in zip(cls._fields, x)]
        return {"kind": "namedtuple", "name": _qualified(cls), "fields": list(cls._fields), "children": children}
    if type(x) in (tuple, list):
        children = [_encode(v, f"{path}[{i}]", arrays) for i, v in enumerate(x)]
        return {"kind": type(x).__name__, "children": children}
    if type(x) is dict:
        keys = list(x)
        for k in keys:
            if type(k) not in (str, int):
                raise E.checkpoint_unsupported(path, f"dict keys must be str or int, got {k!r}")
        children = [_encode(x[k], f"{path}[{k!r}]", arrays) for k in keys]
        return {"kind": "dict", "keys": keys, "children": children}
    if x is None:
        return {"kind": "none"}
    if type(x) is str:
        return {"kind": "str", "value": x}
    key = E.path_str(path)
    if key in arrays:
        raise E.checkpoint_unsupported(path, "two leaves would be stored under the same path")
    if type(x) in _SCALARS:
        if type(x) is int and not -(2**63) <= x < 2**63:
            raise E.checkpoint_unsupported(path, f"int {x} does not fit in int64")
        arrays[key] = np.array(x)
        return {"kind": _SCALARS[type(x)], "key": key}
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype.kind not in "biufc":
            raise E.checkpoint_unsupported(path, f"arrays of dtype {x.dtype} are not supported")
        arrays[key] = np.asarray(x)
        kind = "array" if isinstance(x, np.ndarray) else "npscalar"
        return {"kind": kind, "key": key, "dtype": x.dtype.str, "shape": list(x.shape)}
    raise E.checkpoint_unsupported(path, f"cannot store a leaf of type {type(x).__name__}")


# ------------------------------------------------------------------ load


def load(path: str | os.PathLike[str], like: Tree = None) -> Tree:
    """Read the tree saved at ``path``; with ``like``, check it fits that tree.

    Haskell::

        load :: FilePath -> Maybe Tree -> IO Tree

    ``like`` is a tree of the model's parameters (e.g. ``lens.init(0)``):
    the checkpoint must have its structure, leaf kinds, shapes and dtypes,
    and named tuples are rebuilt with ``like``'s classes. Without ``like``
    named tuples must be registered (see :func:`register_namedtuple`).

    Raises :class:`prelens.CheckpointError` when the file is missing,
    truncated or corrupt, or does not fit ``like`` (naming the tree path).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save(path, (np.zeros(2), [1.5]))
    >>> load(path, like=(np.ones(3), [0.0]))
    Traceback (most recent call last):
    ...
    prelens._errors.CheckpointError: checkpoint ... does not fit the model: at [0]: expected f64[3], got f64[2]
    """
    name = _path("load", path)
    with _open(name) as archive:
        header = _read_header(name, archive)
        known = _known_namedtuples() if like is None else {}
        return _Reader(name, archive, known).decode(header["tree"], "", like, like is not None)


def load_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``metadata`` mapping stored by :func:`save` (``{}`` if none).

    Haskell::

        load_metadata :: FilePath -> IO Metadata

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save(path, (), metadata={"dataset": "iris"})
    >>> load_metadata(path)["dataset"]
    'iris'
    """
    name = _path("load_metadata", path)
    with _open(name) as archive:
        meta = _read_header(name, archive).get("metadata", {})
    if not isinstance(meta, dict):
        raise E.checkpoint_unreadable(name, "the metadata is not a mapping")
    return meta


@contextlib.contextmanager
def _open(path: str) -> Any:
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise E.checkpoint_unreadable(path, "no such file") from None
    except Exception as err:  # numpy and zipfile raise many kinds on damaged bytes
        raise E.checkpoint_unreadable(path, f"not a valid .npz archive ({_why(err)})") from None
    try:
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise E.checkpoint_unreadable(path, "not a .npz archive (a single .npy array)")
        yield archive
    finally:
        if isinstance(archive, np.lib.npyio.NpzFile):
            archive.close()


def _path(fn: str, path: Any) -> str:
    try:
        name: str = os.fspath(path)
    except TypeError:
        raise E.bad_argument(fn, "path", path, "a file path (str or os.PathLike)") from None
    return name


def _why(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _read_array(path: str, archive: Any, key: str) -> np.ndarray:
    if key not in archive.files:
        raise E.checkpoint_unreadable(path, f"the array for {key} is missing")
    try:
        _check_size_on_disk(path, archive, key)
        arr: np.ndarray = archive[key]
    except E.CheckpointError:
        raise
    except Exception as err:  # damaged bytes make numpy and zipfile raise many kinds
        raise E.checkpoint_unreadable(path, f"the array for {key} is corrupt ({_why(err)})") from None
    return arr


def _check_size_on_disk(path: str, archive: Any, key: str) -> None:
    """Read the ``.npy`` header of ``key`` first: a damaged header must not make numpy
    allocate more memory than the file holds, nor hold objects (which would need pickle)."""
    info = archive.zip.getinfo(f"{key}.npy")
    with archive.zip.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    if dtype.hasobject:
        raise E.checkpoint_unreadable(
            path, f"the array for {key} is corrupt (it holds Python objects, which would need allow_pickle=True)"
        )
    if math.prod(shape) * dtype.itemsize > info.file_size:
        raise E.checkpoint_unreadable(path, f"the array for {key} is shorter than its header says")


def _read_header(path: str, archive: Any) -> dict[str, Any]:
    if _HEADER not in archive.files:
        raise E.checkpoint_unreadable(path, f"no {_HEADER} entry (not written by prelens.checkpoint.save)")
    raw = _read_array(path, archive, _HEADER)
    try:
        header = json.loads(str(raw[()]))
    except (ValueError, TypeError, IndexError) as err:
        raise E.checkpoint_unreadable(path, f"the tree description is corrupt ({_why(err)})") from None
    if not isinstance(header, dict) or header.get("format") != _FORMAT or "tree" not in header:
        raise E.checkpoint_unreadable(path, "the tree description is not a prelens checkpoint header")
    if header.get("version") != _VERSION:
        raise E.checkpoint_unreadable(path, f"format version {header.get('version')!r} is not supported")
    return header


class _Reader:
    """Rebuilds a tree from its JSON spec and the archive, optionally against ``like``."""

    def __init__(self, path: str, archive: Any, known: dict[str, type]) -> None:
        self.path = path
        self.archive = archive
        self.known = known

    def corrupt(self, where: str, detail: str) -> E.CheckpointError:
        return E.checkpoint_corrupt_at(self.path, where, detail)

    def mismatch(self, where: str, like: Any, got: str) -> E.CheckpointError:
        expected = _kind_of(like)
        return E.checkpoint_mismatch(self.path, E.at_path(where, expected, got))

    def decode(self, spec: Any, path: str, like: Any, check: bool) -> Tree:
        if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
            raise self.corrupt(path, "malformed tree description")
        kind = spec["kind"]
        handler = self._handlers().get(kind)
        if handler is None:
            raise self.corrupt(path, f"unknown node kind {kind!r}")
        try:
            return handler(spec, path, like, check)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, E.PrelensError):
                raise
            raise self.corrupt(path, f"malformed {kind} node ({_why(err)})") from None

    def _handlers(self) -> dict[str, Callable[[dict[str, Any], str, Any, bool], Tree]]:
        return {
            "tuple": self._sequence,
            "list": self._sequence,
            "namedtuple": self._namedtuple,
            "dict": self._dict,
            "none": self._none,
            "str": self._str,
            "bool": self._scalar,
            "int": self._scalar,
            "float": self._scalar,
            "array": self._array,
            "npscalar": self._array,
        }

    def _children(self, spec: dict[str, Any], path: str, segs: list[str], likes: list[Any], check: bool) -> list[Any]:
        children = spec["children"]
        if not isinstance(children, list) or len(children) != len(segs):
            raise self.corrupt(path, "malformed children list")
        return [self.decode(c, path + s, lk, check) for c, s, lk in zip(children, segs, likes)]

    def _sequence(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        kind, n = spec["kind"], len(spec["children"])
        if check and (type(like) is not (tuple if kind == "tuple" else list) or len(like) != n):
            raise self.mismatch(path, like, f"{kind} of {n}")
        likes = list(like) if check else [None] * n
        items = self._children(spec, path, [f"[{i}]" for i in range(n)], likes, check)
        return tuple(items) if kind == "tuple" else items

    def _namedtuple(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        name, fields = spec["name"], spec["fields"]
        if not isinstance(name, str) or not isinstance(fields, list):
            raise self.corrupt(path, "malformed named tuple")
        short = name.rsplit(".", 1)[-1]
        if check:
            if not (isinstance(like, tuple) and hasattr(like, "_fields")) or type(like).__name__ != short:
                raise self.mismatch(path, like, short)
            cls = type(like)
        else:
            found = self.known.get(name)
            if found is None:
                raise E.checkpoint_unknown_namedtuple(self.path, path, name)
            cls = found
        if list(cls._fields) != fields:
            detail = f"{short} with fields {list(cls._fields)}, got fields {fields}"
            raise E.checkpoint_mismatch(self.path, f"at {E.path_str(path)}: expected {detail}")
        likes = list(like) if check else [None] * len(fields)
        return cls(*self._children(spec, path, [f".{f}" for f in fields], likes, check))

    def _dict(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        keys = spec["keys"]
        if not isinstance(keys, list) or any(type(k) not in (str, int) for k in keys):
            raise self.corrupt(path, "malformed dict keys")
        if check and (type(like) is not dict or list(like) != keys):
            got = f"dict with keys {sorted(map(str, keys))}"
            raise self.mismatch(path, like, got)
        likes = [like[k] for k in keys] if check else [None] * len(keys)
        return dict(zip(keys, self._children(spec, path, [f"[{k!r}]" for k in keys], likes, check)))

    def _none(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        if check and like is not None:
            raise self.mismatch(path, like, "None")
        return None

    def _str(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        value = spec["value"]
        if not isinstance(value, str):
            raise self.corrupt(path, "malformed str leaf")
        if check and type(like) is not str:
            raise self.mismatch(path, like, "str")
        return value

    def _scalar(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        kind = spec["kind"]
        py_type = {"bool": bool, "int": int, "float": float}[kind]
        arr = _read_array(self.path, self.archive, spec["key"])
        if arr.shape != () or arr.dtype.kind != {"bool": "b", "int": "i", "float": "f"}[kind]:
            raise self.corrupt(path, f"the {kind} leaf is stored as {E.describe(arr)}")
        if check and type(like) is not py_type:
            raise self.mismatch(path, like, kind)
        return py_type(arr[()])

    def _array(self, spec: dict[str, Any], path: str, like: Any, check: bool) -> Tree:
        dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
        arr = _read_array(self.path, self.archive, spec["key"])
        if arr.dtype != dtype or arr.shape != shape:
            expected = E.describe(np.empty(shape, dtype))
            raise self.corrupt(path, f"the header says {expected}, the data is {E.describe(arr)}")
        value = arr if spec["kind"] == "array" else arr[()]
        if check:
            same_kind = isinstance(like, np.ndarray) if spec["kind"] == "array" else isinstance(like, np.generic)
            if not same_kind or like.dtype != dtype or like.shape != shape:
                raise self.mismatch(path, like, _kind_of(value))
        return value


def _kind_of(x: Any) -> str:
    """What a node or leaf is, for mismatch messages: ``f32[3,4]``, ``float``, ``list of 2``."""
    if type(x) in (bool, int, float, str):
        return type(x).__name__
    if isinstance(x, np.generic):
        return f"{E.dtype_name(x.dtype)} scalar"
    return E.describe(x)
