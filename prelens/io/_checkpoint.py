"""Checkpoints: parameter trees to ``.npz`` files and back, without pickle.

A checkpoint is an ordinary ``.npz`` archive (``numpy.load(..., allow_pickle=False)`` reads it): one array per leaf
keyed by its tree path (``[0][1].weight``), and ``__prelens__``, a JSON description of the tree (node kinds, Python
leaves versus arrays, every leaf's dtype and shape, optional metadata). Named tuples are rebuilt from ``like=`` or
the registry, never by importing a name the file gives (docs/api.md, ``prelens.io``, has the whole contract).

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "params.npz")
>>> save_checkpoint(path, [(np.float32([1, 2]), 0.5), {"steps": 3}])
>>> load_checkpoint(path)
[(array([1., 2.], dtype=float32), 0.5), {'steps': 3}]
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import sys
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, ClassVar, TypeVar

import numpy as np

from prelens import errors as E
from prelens.backend import _arrays as _backend
from prelens.core._registry import first_found, public_name
from prelens.io._sigint import deferred_sigint

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

Tree = Any
T = TypeVar("T", bound=type)

__all__ = ["load_checkpoint", "load_metadata", "register_namedtuple", "save_checkpoint"]

_HEADER = "__prelens__"
_FORMAT = "prelens-checkpoint"
_VERSION = 1

#: Trees and metadata nest at most this many levels (containers inside containers).
_MAX_DEPTH = 100
#: Without ``like=``, the arrays read from a file may take at most this many times its size.
_MAX_INFLATION = 16
#: Plus this much, so that tiny files of empty or small arrays always load.
_INFLATION_SLACK = 1 << 20
#: Data is read in pieces of this size (never one more copy of a whole array).
_CHUNK = 1 << 20

_registry: dict[str, type] = {}

#: A number in ``like=`` takes a 0-d array of these kinds from the file, as a number (a JAX run's step count).
_KINDS = {int: "iu", float: "f"}


def _unreadable(path: str, detail: str) -> E.CheckpointError:
    return E.CheckpointError(f"checkpoint {path}: cannot be read: {detail}")


def _corrupt_at(path: str, where: str, detail: str) -> E.CheckpointError:
    return E.CheckpointError(f"checkpoint {path}: cannot be read: at {E.path_str(where)}: {detail}")


def _mismatch(path: str, detail: str) -> E.CheckpointError:
    return E.CheckpointError(f"checkpoint {path} does not fit the model: {detail}")


def _unsupported(where: str, detail: str) -> E.CheckpointError:
    return E.CheckpointError(f"cannot save a checkpoint: at {E.path_str(where)}: {detail}")


def _is_namedtuple(x: Any) -> bool:
    """Whether ``x`` is a named tuple class (or, with ``isinstance``, one's instance)."""
    return issubclass(x, tuple) and hasattr(x, "_fields") if isinstance(x, type) else _is_namedtuple(type(x))


def register_namedtuple(cls: T) -> T:
    """Allow :func:`load_checkpoint` to rebuild the named tuple class ``cls``; returns ``cls`` (a decorator).

    >>> from typing import NamedTuple
    >>> @register_namedtuple
    ... class Scale(NamedTuple):
    ...     gain: float
    >>> Scale(2.0)
    Scale(gain=2.0)
    """
    if not (isinstance(cls, type) and _is_namedtuple(cls)):
        raise E.bad_argument("register_namedtuple", "cls", cls, "a NamedTuple class")
    _registry[_qualified(cls)] = cls
    return cls


def _qualified(cls: type) -> str:
    """The name a file stores: the public module's (``prelens.nn.DenseParams``), stable across moves."""
    return public_name(cls.__module__, cls.__qualname__)


def _known_namedtuples() -> dict[str, type]:
    """The registry plus the named tuples of the layers below (the model's and optimisers' parameters)."""
    known: dict[str, type] = {}
    for module in (m for n, m in list(sys.modules.items()) if n.startswith(("prelens.nn", "prelens.learn"))):
        for value in vars(module).values():
            if isinstance(value, type) and _is_namedtuple(value):
                known.setdefault(_qualified(value), value)
    known.update(_registry)
    return known


def save_checkpoint(path: str | os.PathLike[str], tree: Tree, *, metadata: Mapping[str, Any] | None = None) -> None:
    """Write ``tree`` (and JSON-able ``metadata``: numpy's scalars are stored as numbers) to ``path`` atomically.

    The file is written exactly at ``path`` (no suffix is added). Leaves may be arrays of bool/int/uint/float/complex
    dtypes (numpy's, or another array-API library's, stored as the numpy arrays of the same values), numpy scalars,
    and Python ``float``, ``int``, ``bool``, ``str``; nodes tuples, lists, named tuples, dicts with ``str`` or
    ``int`` keys, and ``None``.

    Raises :class:`prelens.errors.CheckpointError` for anything else (naming the path in the tree), for trees or
    metadata nested more than 100 levels deep, for a ``path`` that cannot be a file (a directory, or in a missing
    one: refused before any work), and when writing fails; either way the file that was at ``path`` stays as it was.
    A Ctrl-C during the write is acted on when the file is complete.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save_checkpoint(path, {"w": np.eye(2)}, metadata={"epoch": 3})
    >>> load_metadata(path)
    {'epoch': 3}
    """
    target = target_path("save_checkpoint", path)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise _unsupported("metadata", f"must be a mapping (a dict), got {E.describe(metadata)}")
    arrays: dict[str, np.ndarray] = {}
    spec = _encode(tree, "", arrays, 0)
    meta = dict(metadata or {})
    if _too_deep(meta, _MAX_DEPTH - 1):
        raise _unsupported("metadata", f"nested more than {_MAX_DEPTH} levels deep")
    header = {"format": _FORMAT, "version": _VERSION, "tree": spec, "metadata": meta}
    try:
        text = json.dumps(header, allow_nan=False, default=json_number)
    except (TypeError, ValueError) as err:
        raise _unsupported("metadata", f"must be JSON-serialisable ({err})") from None
    arrays[_HEADER] = np.array(text)
    _write_atomically(target, arrays)


def json_number(x: Any) -> Any:
    """A numpy scalar as JSON's number or bool (``json.dumps``'s ``default``); anything else is not JSON."""
    value = x.item() if isinstance(x, (np.number, np.bool_)) else x
    if isinstance(value, (bool, int, float)):
        return value
    raise TypeError(f"Object of type {type(x).__name__} is not JSON serializable")


def _write_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _remove_stale_temporaries(directory, base)
    tmp_name = None
    with deferred_sigint():  # a Ctrl-C now is acted on once the file is whole (or the write has failed)
        try:
            fd, tmp_name = _create_temporary(directory, base)
            with os.fdopen(fd, "wb") as f:
                if fcntl is not None:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # "being written": see _remove_stale_temporaries
                _write_npz(f, arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp_name, path)
            tmp_name = None
            _fsync_directory(directory)
        except OSError as err:
            detail = f"{type(err).__name__}: {err}; the file there (if any) is unchanged"
            raise E.CheckpointError(f"cannot write checkpoint {path}: {detail}") from err
        finally:
            if tmp_name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name)


def _write_npz(f: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """What ``numpy.savez`` writes (one uncompressed ``<key>.npy`` member per array), abandoned cleanly on failure."""
    archive = zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True)
    try:
        for key, arr in arrays.items():
            with archive.open(f"{key}.npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)
    except BaseException:  # the caller deletes the file; zipfile would refuse to close with a member open
        vars(archive)["_writing"] = False
        with contextlib.suppress(Exception):
            archive.close()
        raise
    archive.close()


def _create_temporary(directory: str, base: str) -> tuple[int, str]:
    """A new file next to the target, created exclusively (umask applies), named with this process's pid."""
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.path.join(directory, f".{base}.*.tmp"))


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Delete the temporary files of killed saves: no process with their pid alive, no one holding their ``flock``
    (a writer holds it until its file is whole). Best effort; nothing is removed without ``flock``."""
    if fcntl is None:
        return
    pattern = re.compile(rf"\.{re.escape(base)}\.(\d+)\.[0-9a-f]{{8}}\.tmp")
    try:
        entries = [e.name for e in os.scandir(directory)]
    except OSError:
        return
    for name in entries:
        found = pattern.fullmatch(name)
        if found is None or _pid_alive(int(found.group(1))):
            continue
        with contextlib.suppress(OSError):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError if a writer holds it
                os.unlink(os.path.join(directory, name))
            finally:
                os.close(fd)


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists here (when unsure: yes, e.g. someone else's)."""
    try:
        if pid > 0:
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        pass
    return True


def unwritable_reason(path: str) -> str | None:
    """Why :func:`save_checkpoint` could not write to ``path`` (checked before any work), or None if it could."""
    if path == "":
        return "it is not a file path"
    if os.path.isdir(path):
        return "it is a directory"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(directory):
        return f"the directory {directory} does not exist"
    if not os.path.isdir(directory):
        return f"{directory} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"the directory {directory} is not writable"
    return None


def writable_path(fn: str, name: str, path: Any, expected: str = "a file path (str or os.PathLike)") -> None:
    """Refuse, before any work, an argument ``name`` of ``fn`` that is not a path :func:`save_checkpoint` can write."""
    target = file_path(fn, path, name, expected)
    why = unwritable_reason(target)
    if why is not None:
        raise E.unwritable_path(fn, name, target, why)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable where the platform allows it (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _encode(x: Any, path: str, arrays: dict[str, np.ndarray], depth: int) -> dict[str, Any]:
    """The JSON spec of ``x`` (inside ``depth`` nodes); leaves go into ``arrays`` under their path."""
    if (_is_namedtuple(x) or type(x) in (tuple, list, dict)) and depth >= _MAX_DEPTH:
        raise _unsupported(path, f"the tree is nested more than {_MAX_DEPTH} levels deep")
    if _is_namedtuple(x):
        cls = type(x)
        children = [_encode(v, f"{path}.{f}", arrays, depth + 1) for f, v in zip(cls._fields, x)]
        return {"kind": "namedtuple", "name": _qualified(cls), "fields": list(cls._fields), "children": children}
    if type(x) in (tuple, list):
        children = [_encode(v, f"{path}[{i}]", arrays, depth + 1) for i, v in enumerate(x)]
        return {"kind": type(x).__name__, "children": children}
    if type(x) is dict:
        keys = list(x)
        for k in (k for k in keys if type(k) not in (str, int)):
            raise _unsupported(path, f"dict keys must be str or int, got {k!r}")
        children = [_encode(x[k], f"{path}[{k!r}]", arrays, depth + 1) for k in keys]
        return {"kind": "dict", "keys": keys, "children": children}
    if x is None:
        return {"kind": "none"}
    if type(x) is str:
        return {"kind": "str", "value": x}
    key = E.path_str(path)
    if key in arrays:
        raise _unsupported(path, "two leaves would be stored under the same path")
    if type(x) in (bool, int, float):
        if type(x) is int and not -(2**63) <= x < 2**63:
            raise _unsupported(path, f"int {x} does not fit in int64")
        arrays[key] = np.array(x)
        return {"kind": type(x).__name__, "key": key}
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype.kind not in "biufc":
            raise _unsupported(path, f"arrays of dtype {x.dtype} are not supported")
        arrays[key] = np.asarray(x)
        kind = "array" if isinstance(x, np.ndarray) else "npscalar"
        return {"kind": kind, "key": key, "dtype": x.dtype.str, "shape": list(x.shape)}
    if not _backend.is_array(x):
        raise _unsupported(path, f"cannot store a leaf of type {type(x).__name__}")
    lib = _backend.namespace_name(_backend.namespace(x))  # another library's: the numpy array of its values
    if not _backend.is_concrete(x):
        raise _unsupported(
            path, f"a {lib} value being traced (under jax.jit) has no numbers yet: save outside the compiled function"
        )
    unsupported = f"{lib} arrays of dtype {_backend.dtype_name(x.dtype)} are not supported"
    try:
        host = np.asarray(_backend.to_numpy(x))
    except (TypeError, ValueError, RuntimeError, BufferError) as err:
        raise _unsupported(path, f"{unsupported} ({_why(err)})") from None
    if host.dtype.kind not in "biufc" or tuple(host.shape) != tuple(x.shape):
        raise _unsupported(path, unsupported)
    arrays[key] = host
    return {"kind": "array", "key": key, "dtype": host.dtype.str, "shape": list(host.shape)}


def load_checkpoint(path: str | os.PathLike[str], like: Tree = None, *, backend: Any = "numpy") -> Tree:
    """Read the tree saved at ``path``; with ``like``, check it fits that tree.

    ``like`` is a tree of the model's parameters (e.g. ``lens.init(0)``): the checkpoint must have its structure,
    leaf kinds, shapes and dtypes, and named tuples are rebuilt with ``like``'s classes; without ``like`` they must
    be registered (:func:`register_namedtuple`). ``backend`` (as in :func:`prelens.backend.to_backend`) is the
    library the arrays are returned in.

    Raises :class:`prelens.errors.CheckpointError` when the file is missing, truncated, corrupt or inconsistent
    (sizes that disagree, nesting deeper than 100 levels, more data than 16 times the file's size without ``like``),
    or does not fit ``like`` (naming the tree path).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save_checkpoint(path, (np.zeros(2), [1.5]))
    >>> load_checkpoint(path, like=(np.ones(3), [0.0]))
    Traceback (most recent call last):
    ...
    prelens.errors.CheckpointError: checkpoint ... does not fit the model: at [0]: expected f64[3], got f64[2]
    """
    name = file_path("load_checkpoint", path)
    xp = _backend.resolve_backend("load_checkpoint", backend)
    with _open(name) as archive:
        header = _read_header(archive)
        known = _known_namedtuples() if like is None else {}
        try:
            tree = _Reader(archive, known, like is not None).decode(header["tree"], "", like, 0)
        except RecursionError:  # the caller's own stack was nearly full: still no bare RecursionError
            raise _unreadable(name, "the tree description is nested too deeply") from None
    return tree if xp is np else _in_backend("load_checkpoint", tree, backend)


def _in_backend(fn: str, tree: Tree, backend: Any) -> Tree:
    """The arrays of a tree just read moved to ``backend`` (a name or namespace that resolved)."""
    try:
        return _backend.to_backend(tree, backend)
    except (TypeError, ValueError, RuntimeError) as err:
        expected = f"a library that holds every array of the file ({_why(err)})"
        raise E.bad_argument(fn, "backend", backend, expected) from None


def load_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``metadata`` mapping stored by :func:`save_checkpoint` (``{}`` if none).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> save_checkpoint(path, (), metadata={"dataset": "iris"})
    >>> load_metadata(path)["dataset"]
    'iris'
    """
    name = file_path("load_metadata", path)
    with _open(name) as archive:
        meta = _read_header(archive).get("metadata", {})
    if not isinstance(meta, dict):
        raise _unreadable(name, "the metadata is not a mapping")
    if _too_deep(meta, _MAX_DEPTH - 1):
        raise _unreadable(name, f"the metadata is nested more than {_MAX_DEPTH} levels deep")
    return meta


class _Archive:
    """An open checkpoint: its ZIP directory, its size on disk, and how much more it may inflate to."""

    def __init__(self, path: str, zip_: zipfile.ZipFile, size: int) -> None:
        self.path, self.zip, self.size = path, zip_, size
        self.budget = _MAX_INFLATION * size + _INFLATION_SLACK

    def read(
        self,
        key: str,
        where: str | None,
        kinds: str,
        dtype: np.dtype[Any] | None,
        shape: tuple[int, ...],
        *,
        charge: bool,
    ) -> np.ndarray:
        """The array under ``key`` (the leaf at ``where``): nothing is allocated before its ``.npy`` header (a dtype
        of ``kinds``, ``dtype`` if given, and ``shape``) and the archive's byte counts agree, and ``charge`` takes its
        bytes from the budget (without ``like=`` nothing else bounds them)."""
        try:
            info = self.zip.getinfo(f"{key}.npy")
        except KeyError:
            raise _unreadable(self.path, f"the array for {key} is missing") from None
        bad = f"the array for {key}"
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _unreadable(
                self.path, f"{bad} is compressed with method {info.compress_type}, which prelens does not read"
            )
        if info.flag_bits & 0x1:
            raise _unreadable(self.path, f"{bad} is encrypted")
        if info.header_offset + info.compress_size > self.size:
            raise _unreadable(self.path, f"{bad} claims {info.compress_size} bytes, past the end of the file")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise _unreadable(self.path, f"{bad} is corrupt (its stored and unpacked sizes differ)")
        try:
            with self.zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                if version not in read_header:
                    raise _unreadable(self.path, f"{bad} has an unsupported .npy version {version}")
                got_shape, fortran, got_dtype = read_header[version](f)
                if got_dtype.hasobject:
                    raise _unreadable(
                        self.path, f"{bad} is corrupt (it holds Python objects, which would need allow_pickle=True)"
                    )
                wrong_dtype = got_dtype.kind not in kinds or (dtype is not None and got_dtype != dtype)
                if wrong_dtype or tuple(got_shape) != shape:
                    got = _shape_str(got_dtype, got_shape)
                    if where is None:
                        raise _unreadable(self.path, f"{bad} is corrupt (it is {got})")
                    # an array leaf gives its dtype and shape; a Python scalar's kind is "b", "i" or "f"
                    said = _shape_str(dtype, shape) if dtype is not None else _SCALAR_KINDS[kinds]
                    raise _corrupt_at(self.path, where, f"the header says {said}, the data is {got}")
                nbytes = math.prod(got_shape) * got_dtype.itemsize
                data_at = f.tell()
                if info.file_size != data_at + nbytes:
                    short = "shorter" if info.file_size < data_at + nbytes else "longer"
                    raise _unreadable(self.path, f"{bad} is {short} than its header says")
                if charge:
                    self.budget -= info.file_size
                    if self.budget < 0:
                        raise _unreadable(
                            self.path,
                            f"{bad} would take the data read past {_MAX_INFLATION} times the file's "
                            "size (a decompression bomb?); pass like=<the model's parameters> to load a file "
                            "this compressed",
                        )
                flat = np.empty(math.prod(got_shape), got_dtype)  # filled in pieces, never one more copy
                raw, done = flat.view(np.uint8), 0
                while done < nbytes:
                    piece = f.read(min(_CHUNK, nbytes - done))
                    if not piece:
                        raise _unreadable(self.path, f"{bad} is shorter than its header says")
                    raw[done : done + len(piece)] = np.frombuffer(piece, np.uint8)
                    done += len(piece)
                if f.read(1):  # and the stream's CRC is checked at its end
                    raise _unreadable(self.path, f"{bad} is longer than its header says")
                return flat.reshape(got_shape[::-1]).T if fortran else flat.reshape(got_shape)
        except E.CheckpointError:
            raise
        except Exception as err:  # damaged bytes make numpy and zipfile raise many kinds
            raise _unreadable(self.path, f"{bad} is corrupt ({_why(err)})") from None


_SCALAR_KINDS = {"b": "a bool", "i": "an int", "f": "a float"}


def _shape_str(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    """``f64[3,4]``, as :func:`prelens.errors.describe` writes an array, without making one."""
    return f"{E.dtype_name(dtype)}[{','.join(map(str, shape))}]"


@contextlib.contextmanager
def _open(path: str) -> Iterator[_Archive]:
    try:
        f = open(path, "rb")  # closed below, after the archive
    except FileNotFoundError:
        raise _unreadable(path, "no such file") from None
    except OSError as err:
        raise _unreadable(path, _why(err)) from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if f.read(6) == b"\x93NUMPY":
                raise _unreadable(path, "not a .npz archive (a single .npy array)")
            f.seek(0)
            zip_ = zipfile.ZipFile(f)
        except E.CheckpointError:
            raise
        except Exception as err:  # zipfile raises many kinds on damaged bytes
            raise _unreadable(path, f"not a valid .npz archive ({_why(err)})") from None
        with zip_:
            yield _Archive(path, zip_, size)


def file_path(fn: str, path: Any, name: str = "path", expected: str = "a file path (str or os.PathLike)") -> str:
    """``path`` as a ``str`` (an ``os.PathLike`` is read with ``os.fspath``), or an error naming ``fn``'s ``name``."""
    try:
        text = os.fspath(path)
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise E.bad_argument(fn, name, path, expected)
    return text


def target_path(fn: str, path: Any) -> str:
    """:func:`file_path` of a file that can be written there (a directory, say, is refused before any work)."""
    target = file_path(fn, path)
    why = unwritable_reason(target)
    if why is not None:
        raise E.CheckpointError(f"cannot write checkpoint {target}: {why}; nothing was written")
    return target


def _why(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _too_deep(x: Any, levels: int) -> bool:
    """Whether the JSON-like value ``x`` nests containers more than ``levels`` deep below itself (no recursion)."""
    stack = [(x, 0)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, (list, tuple)) else ()
        for child in children:
            if isinstance(child, (dict, list, tuple)):
                if depth + 1 > levels:
                    return True
                stack.append((child, depth + 1))
    return False


def _read_header(archive: _Archive) -> dict[str, Any]:
    path = archive.path
    if f"{_HEADER}.npy" not in archive.zip.namelist():
        raise _unreadable(path, f"no {_HEADER} entry (not written by prelens.io.save_checkpoint)")
    raw = archive.read(_HEADER, None, "U", None, (), charge=True)
    try:
        header = json.loads(str(raw[()]))
    except RecursionError:
        raise _unreadable(path, "the tree description is nested too deeply") from None
    except (ValueError, TypeError, IndexError) as err:
        raise _unreadable(path, f"the tree description is corrupt ({_why(err)})") from None
    if not isinstance(header, dict) or header.get("format") != _FORMAT or "tree" not in header:
        raise _unreadable(path, "the tree description is not a prelens checkpoint header")
    if header.get("version") != _VERSION:
        raise _unreadable(path, f"format version {header.get('version')!r} is not supported")
    return header


class _Reader:
    """Rebuilds a tree from its JSON spec and the archive, optionally against ``like``."""

    def __init__(self, archive: _Archive, known: dict[str, type], check: bool) -> None:
        self.path, self.archive, self.known, self.check = archive.path, archive, known, check  # check: against like=

    def corrupt(self, where: str, detail: str) -> E.CheckpointError:
        return _corrupt_at(self.path, where, detail)

    def mismatch(self, where: str, like: Any, got: str) -> E.CheckpointError:
        """``like`` written as ``f32[3,4]``, ``float``, ``f64 scalar`` or ``list of 2``, against what the file has."""
        if type(like) in (bool, int, float, str):
            expected = type(like).__name__
        else:
            expected = f"{E.dtype_name(like.dtype)} scalar" if isinstance(like, np.generic) else E.describe(like)
        return _mismatch(self.path, E.at_path(where, expected, got))

    def decode(self, spec: Any, path: str, like: Any, depth: int) -> Tree:
        if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
            raise self.corrupt(path, "malformed tree description")
        kind = spec["kind"]
        handler = self._HANDLERS.get(kind)
        if handler is None:
            raise self.corrupt(path, f"unknown node kind {kind!r}")
        if kind in ("tuple", "list", "namedtuple", "dict") and depth >= _MAX_DEPTH:
            raise self.corrupt(path, f"the tree is nested more than {_MAX_DEPTH} levels deep")
        try:
            return handler(self, spec, path, like, depth)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, E.PrelensError):
                raise
            raise self.corrupt(path, f"malformed {kind} node ({_why(err)})") from None

    def _children(self, spec: dict[str, Any], path: str, segs: list[str], likes: Any, depth: int) -> list[Any]:
        """The children at ``path + seg``, each against its like (``likes`` is None without ``like=``)."""
        children = spec["children"]
        if not isinstance(children, list) or len(children) != len(segs):
            raise self.corrupt(path, "malformed children list")
        likes = [None] * len(segs) if likes is None else likes
        return [self.decode(c, path + s, lk, depth + 1) for c, s, lk in zip(children, segs, likes)]

    def _sequence(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        kind, n = spec["kind"], len(spec["children"])
        if self.check and (type(like) is not (tuple if kind == "tuple" else list) or len(like) != n):
            raise self.mismatch(path, like, f"{kind} of {n}")
        items = self._children(spec, path, [f"[{i}]" for i in range(n)], like, depth)
        return tuple(items) if kind == "tuple" else items

    def _namedtuple(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        name, fields = spec["name"], spec["fields"]
        if not isinstance(name, str) or not isinstance(fields, list):
            raise self.corrupt(path, "malformed named tuple")
        short = name.rsplit(".", 1)[-1]
        if self.check:
            if not _is_namedtuple(like) or type(like).__name__ != short:
                raise self.mismatch(path, like, short)
            cls = type(like)
        else:
            module, _, qualname = name.rpartition(".")  # a 0.3 file names the private module
            found = first_found(self.known, public_name(module, qualname))
            if found is None:
                raise E.CheckpointError(
                    f"checkpoint {self.path}: at {E.path_str(path)}: named tuple {name} is not registered; "
                    "pass like=<a tree of the model's parameters> or prelens.io.register_namedtuple(cls)"
                )
            cls = found
        if list(cls._fields) != fields:
            raise _mismatch(self.path, E.at_path(path, f"{short} with fields {list(cls._fields)}", f"fields {fields}"))
        return cls(*self._children(spec, path, [f".{f}" for f in fields], like, depth))

    def _dict(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        keys = spec["keys"]
        if not isinstance(keys, list) or any(type(k) not in (str, int) for k in keys):
            raise self.corrupt(path, "malformed dict keys")
        if self.check and (type(like) is not dict or list(like) != keys):
            if type(like) is dict and len(like) == len(keys) and set(like) == set(keys):  # (trees are ordered)
                raise _mismatch(self.path, E.at_path(path, f"dict keys in the order {list(like)}", str(keys)))
            raise self.mismatch(path, like, f"dict with keys {sorted(map(str, keys))}")
        likes = like.values() if self.check else None  # in the order of keys, checked above
        return dict(zip(keys, self._children(spec, path, [f"[{k!r}]" for k in keys], likes, depth)))

    def _none_or_str(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        value = spec["value"] if spec["kind"] == "str" else None
        if spec["kind"] == "str" and not isinstance(value, str):
            raise self.corrupt(path, "malformed str leaf")
        if self.check and type(like) is not type(value):
            raise self.mismatch(path, like, "None" if value is None else "str")
        return value

    def _scalar(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        kind = spec["kind"]
        py_type = {"bool": bool, "int": int, "float": float}[kind]
        if self.check and type(like) is not py_type:
            raise self.mismatch(path, like, kind)
        if not isinstance(key := spec["key"], str):
            raise self.corrupt(path, f"malformed {kind} leaf (key {key!r})")
        return py_type(self.archive.read(key, path, kind[0], None, (), charge=False)[()])

    def _array(self, spec: dict[str, Any], path: str, like: Any, depth: int) -> Tree:
        kind, key, dtype, shape = spec["kind"], spec["key"], _dtype(spec["dtype"]), _shape(spec["shape"])
        is_array = kind == "array"
        if not isinstance(key, str) or dtype is None or shape is None or (not is_array and shape != ()):
            what = {"key": spec["key"], "dtype": spec["dtype"], "shape": spec["shape"]}
            raise self.corrupt(path, f"malformed {kind} leaf ({what})")
        if self.check and type(like) in (int, float) and is_array and shape == () and dtype.kind in _KINDS[type(like)]:
            return type(like)(self.archive.read(key, path, "biufc", dtype, shape, charge=False)[()])  # a JAX step
        if self.check:
            same_kind = _backend.is_array(like) if is_array else isinstance(like, np.generic)
            if not same_kind or not _backend.has_dtype(like, dtype) or tuple(like.shape) != shape:
                got = _shape_str(dtype, shape) if is_array else f"{E.dtype_name(dtype)} scalar"
                raise self.mismatch(path, like, got)
        # Sizes checked against like= (the model bounds them) need no budget; without it they do.
        arr = self.archive.read(key, path, "biufc", dtype, shape, charge=not self.check)
        return arr if is_array else arr[()]

    _HANDLERS: ClassVar[dict[str, Callable[..., Tree]]] = {
        **dict.fromkeys(("tuple", "list"), _sequence),
        "namedtuple": _namedtuple,
        "dict": _dict,
        **dict.fromkeys(("none", "str"), _none_or_str),
        **dict.fromkeys(("bool", "int", "float"), _scalar),
        **dict.fromkeys(("array", "npscalar"), _array),
    }


def _dtype(text: Any) -> np.dtype[Any] | None:
    """A leaf dtype from the description: a plain bool, int, uint, float or complex type, nothing else."""
    if not isinstance(text, str) or len(text) > 8:
        return None
    try:
        dtype = np.dtype(text)
    except TypeError:
        return None
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        return None
    return dtype


def _shape(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list) or len(value) > 64 or any(type(d) is not int or d < 0 for d in value):
        return None
    return tuple(value)
