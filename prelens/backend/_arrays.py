"""Array namespaces: which array library an array belongs to, and the few things every lens needs of it.

A lens takes its namespace ``xp`` from the arrays it is given (docs/backends.md). numpy arrays never
leave numpy: :func:`namespace` returns ``numpy`` itself for them, and ``array-api-compat`` is imported
only when another library's array first arrives. A lens's numpy dtype matches another library's dtype
of the same name (:func:`has_dtype`).

>>> import numpy as np
>>> namespace(np.zeros(2)) is np, is_array(np.zeros(2)), is_array([1.0])
(True, True, False)
>>> dtype_name(np.float32), has_dtype(np.zeros(2, np.float32), np.dtype(np.float32))
('float32', True)
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.errors import DTYPE_KINDS

#: The backends a name may pick: numpy, the standard's strict reference, PyTorch and JAX.
BACKENDS = ("numpy", "array_api_strict", "torch", "jax")

_NOT_ARRAYS = (int, float, complex, bool, str, bytes, tuple, list, dict, type(None), np.generic)


@functools.cache
def _compat() -> ModuleType:
    import array_api_compat

    return array_api_compat


def is_array(x: Any) -> bool:
    """True for an array of any array-API library (numpy scalars and Python numbers are not arrays).

    >>> is_array(np.float64(1.0)), is_array(np.ones(1))
    (False, True)
    """
    if type(x) is np.ndarray:
        return True
    if isinstance(x, _NOT_ARRAYS) or not hasattr(x, "shape") or not hasattr(x, "dtype"):
        return False
    return isinstance(x, np.ndarray) or bool(_compat().is_array_api_obj(x))


def namespace(x: Any) -> Any:
    """The array API namespace of ``x``: ``numpy`` itself, ``array_api_compat.torch``, ``jax.numpy``, ...

    >>> namespace(np.ones(3)).__name__
    'numpy'
    """
    if isinstance(x, (np.ndarray, np.generic)):
        return np
    return _compat().array_namespace(x)


def device(x: Any) -> Any:
    """The device of an array of any library (``"cpu"`` for numpy; ``None`` for a JAX array being traced).

    >>> device(np.ones(2))
    'cpu'
    """
    return _compat().device(x)


def is_float(x: Any) -> bool:
    """True for a float array of any library (numpy: one attribute read).

    >>> is_float(np.zeros(1)), is_float(np.zeros(1, int)), is_float(1.0)
    (True, False, False)
    """
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "f")
    return is_array(x) and dtype_kind(x.dtype) == "f"


def shape(x: Any) -> tuple[int, ...]:
    """The shape of an array of any library as a tuple of ints, or numpy's ``np.shape`` of anything else.

    >>> shape(np.zeros((2, 3))), shape(1.5), shape([1.0, 2.0])
    ((2, 3), (), (2,))
    """
    return tuple(x.shape) if is_array(x) else np.shape(x)


def is_real(x: object) -> bool:
    """A real number: ints and floats, Python's or numpy's (bools are not).

    >>> is_real(2), is_real(np.float32(1.5)), is_real(True), is_real("1")
    (True, True, False, False)
    """
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def is_real_scalar(x: Any) -> bool:
    """A real number (:func:`is_real`) or a 0-d int or float array of any library (not a bool).

    >>> is_real_scalar(2), is_real_scalar(np.array(0.5)), is_real_scalar(True), is_real_scalar(np.ones(2))
    (True, True, False, False)
    """
    if is_real(x):
        return True
    if isinstance(x, np.ndarray):
        return x.ndim == 0 and x.dtype.kind in "fiu"
    return is_array(x) and x.ndim == 0 and dtype_kind(x.dtype) in "fiu"


def zeros_like(x: Any) -> Any:
    """Zeros like ``x``: an array of its library, dtype and device, or a number of its type.

    >>> zeros_like(np.ones(2, np.float32)), zeros_like(np.float64(3.0)), zeros_like(7)
    (array([0., 0.], dtype=float32), np.float64(0.0), 0)
    """
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if is_array(x):
        return namespace(x).zeros_like(x)
    return type(x)(0)


def same_library(x: Any, like: Any) -> bool:
    """True when ``x`` is an array of the library of the array ``like`` (a JAX tracer is JAX's).

    >>> same_library(np.zeros(2), np.ones(3)), same_library([0.0], np.ones(3))
    (True, False)
    """
    return type(x) is type(like) or (is_array(x) and namespace(x) is namespace(like))


def constant_like(c: Any, x: Any) -> Any:
    """The numpy constant ``c`` (values and dtype kept) as an array of ``x``'s library on its device (numpy: ``c``).

    >>> c = np.ones(2); constant_like(c, np.zeros(3)) is c
    True
    """
    if isinstance(x, np.ndarray):
        return c
    # a copy of a read-only constant: a library that would share its memory (torch) warns that it cannot write it
    read_only = isinstance(c, np.ndarray) and not c.flags.writeable
    return namespace(x).asarray(c, device=device(x), copy=True if read_only else None)


def namespace_name(xp: Any) -> str:
    """The short name of a namespace: ``numpy``, ``torch``, ``jax``, ``array_api_strict``.

    >>> namespace_name(np)
    'numpy'
    """
    name = getattr(xp, "__name__", type(xp).__name__)
    if name.startswith("array_api_compat."):
        name = name.split(".")[1]
    return {"jax.numpy": "jax"}.get(name, name)


def dtype_name(dtype: Any) -> str:
    """The standard name of a dtype of any library: ``float32``, ``int64``, ``bool``.

    >>> dtype_name(np.dtype("f8"))
    'float64'
    """
    if isinstance(dtype, np.dtype):
        return dtype.name
    # Cached by (library, dtype): a library's dtype may hash as numpy's and warn when compared with it.
    return _dtype_name(type(dtype).__module__, dtype)


@functools.cache
def _dtype_name(_: str, dtype: Any) -> str:
    try:
        return str(np.dtype(dtype).name)
    except TypeError:
        return str(dtype).rsplit(".", 1)[-1]


def dtype_kind(dtype: Any) -> str:
    """numpy's one-letter kind of a dtype of any library: ``f``, ``i``, ``u``, ``b``, ``c``.

    >>> dtype_kind(np.float32), dtype_kind(np.int8)
    ('f', 'i')
    """
    if isinstance(dtype, np.dtype) and dtype.kind != "V":  # (V: ml_dtypes' bfloat16, JAX's, is read by its name)
        return dtype.kind
    return DTYPE_KINDS.get(dtype_name(dtype).rstrip("0123456789"), "?")


def has_dtype(x: Any, dt: np.dtype[Any]) -> bool:
    """True when ``x`` (an array of any library) has the dtype named as the numpy dtype ``dt``.

    >>> has_dtype(np.zeros(1), np.dtype(np.float32))
    False
    """
    d = x.dtype
    return d == dt if isinstance(d, np.dtype) else dtype_name(d) == dt.name


def autograd_off() -> contextlib.AbstractContextManager[Any]:
    """PyTorch's autograd off (``torch.no_grad()``) while prelens computes its own gradients, so that parameters
    that require grad build no graph; nothing to do (a null context) in a process without torch.

    >>> with autograd_off():
    ...     pass
    """
    torch = sys.modules.get("torch")
    return contextlib.nullcontext() if torch is None else torch.no_grad()


def copy(x: Any) -> Any:
    """A copy of an array that no one else can write into (JAX arrays are immutable: ``x`` itself).

    A tensor that requires grad is copied detached: prelens computes its own gradients, and a copy kept in
    PyTorch's autograd graph would chain every training step's parameters to the last (``fit`` copies them once).

    >>> a = np.ones(2); b = copy(a); b[0] = 5.0; a
    array([1., 1.])
    """
    if isinstance(x, np.ndarray):
        return x.copy()
    c = _compat()
    if c.is_jax_array(x):
        return x
    if c.is_torch_array(x):
        return x.detach().clone()
    return namespace(x).asarray(x, copy=True)


def is_concrete(x: Any) -> bool:
    """False for an abstract value being traced by JAX (under ``jit``): checks that need values skip it.

    >>> is_concrete(np.ones(1))
    True
    """
    if isinstance(x, np.ndarray):
        return True
    jax = sys.modules.get("jax")
    return jax is None or not isinstance(x, jax.core.Tracer)


def to_numpy(x: Any) -> Any:
    """An array of any library as a numpy array on the host (numpy arrays are returned as they are).

    >>> to_numpy(np.arange(2))
    array([0, 1])
    """
    if isinstance(x, np.ndarray):
        return x
    if not is_array(x):
        raise E.must_be("to_numpy", "x", "an array of numpy, PyTorch, JAX or another array API library", E.describe(x))
    c = _compat()
    if c.is_torch_array(x):
        t = x.detach().cpu()
        if dtype_name(t.dtype) != "bfloat16":
            return t.numpy()
        import torch  # numpy has no bfloat16: ml_dtypes' (JAX's), the same 16 bits

        return t.view(torch.int16).numpy().view(_bfloat16("to_numpy"))
    if c.is_jax_array(x):
        return np.asarray(x)
    return np.from_dlpack(x)


def _bfloat16(fn: str) -> Any:
    """numpy's bfloat16, ml_dtypes' (installed with JAX), or an error naming ``fn``."""
    try:
        import ml_dtypes
    except ImportError:
        raise E.MissingExtraError(
            f"{fn}: a bfloat16 tensor needs ml_dtypes for its numpy dtype (pip install ml_dtypes), or cast it first"
        ) from None
    return ml_dtypes.bfloat16


def host(x: Any) -> Any:
    """An array of any library as a numpy array (:func:`to_numpy`); anything else as it is.

    >>> host(2.0), host(np.ones(1))
    (2.0, array([1.]))
    """
    return to_numpy(x) if is_array(x) else x


def resolve_backend(fn: str, backend: Any) -> Any:
    """The namespace a backend name or module stands for (``"numpy"``, ``"torch"``, ``"jax"``, ...), imported
    on demand; an unknown name or one not installed is an error naming ``fn``.

    >>> resolve_backend("to_backend", "numpy") is np
    True
    """
    if not isinstance(backend, str):
        if isinstance(backend, ModuleType) and hasattr(backend, "asarray") and hasattr(backend, "float64"):
            return np if backend is np else backend
        raise E.bad_argument(fn, "backend", backend, f"one of {', '.join(BACKENDS)} or an array API namespace")
    if backend not in BACKENDS:
        raise E.not_one_of(fn, "backend", BACKENDS, backend)
    if backend == "numpy":
        return np
    try:
        lib = importlib.import_module({"jax": "jax.numpy"}.get(backend, backend))
        return _compat().array_namespace(lib.zeros(0)) if backend == "torch" else lib
    except ImportError:
        extra = {"jax": "jax", "torch": "torch"}.get(backend, "test")
        raise E.bad_argument(fn, "backend", backend, f"an installed library (pip install 'prelens[{extra}]')") from None


def scatter_add_rows(n_rows: int, idx: Any, values: Any) -> Any:
    """``out[idx[k]] += values[k]`` into zeros of ``(n_rows, d)``: the gradient of a table lookup.

    ``idx (N,)`` integers, ``values (N, d)``, of one library. numpy: one ``np.add.at`` on the flat output
    (about 5x faster than on rows for a 64 x 64 table); PyTorch ``index_add``, JAX ``.at[].add``; any
    other library a one-hot matrix product (exact: each sum is the same additions).

    >>> scatter_add_rows(3, np.array([0, 2, 0]), np.ones((3, 2)))
    array([[2., 2.],
           [0., 0.],
           [1., 1.]])
    """
    if isinstance(values, np.ndarray):
        d = values.shape[1]
        out = np.zeros((n_rows, d), values.dtype)
        np.add.at(out.reshape(-1), (np.multiply(idx, d)[:, None] + np.arange(d)).reshape(-1), values.reshape(-1))
        return out
    c = _compat()
    xp = namespace(values)
    if c.is_torch_array(values):
        import torch

        out = torch.zeros((n_rows, values.shape[1]), dtype=values.dtype, device=values.device)
        return out.index_add(0, _index(idx), values)
    if c.is_jax_array(values):
        return xp.zeros((n_rows, values.shape[1]), values.dtype).at[idx].add(values)
    rows = xp.arange(n_rows, dtype=idx.dtype, device=c.device(idx))
    one_hot = xp.astype(idx[None, :] == rows[:, None], values.dtype)
    return one_hot @ values


def take_rows(table: Any, idx: Any) -> Any:
    """``table[idx]``: the rows of ``table (n_rows, d)`` at the integers ``idx (N,)``, of any integer dtype; the table
    lookup whose gradient :func:`scatter_add_rows` is.

    >>> take_rows(np.arange(6.0).reshape(3, 2), np.array([2, 0], np.uint8))
    array([[4., 5.],
           [0., 1.]])
    """
    return namespace(table).take(table, _index(idx), axis=0)


def _index(idx: Any) -> Any:
    """Integer indices as their library takes them: PyTorch's int32 and int64 only (a narrower dtype widened)."""
    if isinstance(idx, np.ndarray) or not _compat().is_torch_array(idx):
        return idx
    import torch

    return idx if idx.dtype in (torch.int32, torch.int64) else idx.to(torch.int64)


def tree_map_arrays(f: Callable[[Any], Any], tree: Any) -> Any:
    """``f`` applied to every array leaf of a tree of tuples, named tuples, lists and dicts.

    >>> tree_map_arrays(lambda a: a * 2, (np.ones(1), [3.0]))
    (array([2.]), [3.0])
    """
    if is_array(tree):
        return f(tree)
    if isinstance(tree, tuple):
        items = [tree_map_arrays(f, t) for t in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    if isinstance(tree, list):
        return [tree_map_arrays(f, t) for t in tree]
    if isinstance(tree, dict):
        return {k: tree_map_arrays(f, v) for k, v in tree.items()}
    return tree


def to_backend(tree: Any, backend: Any = "numpy", *, device: Any = None) -> Any:
    """A copy of ``tree`` with every array leaf moved to ``backend`` (and ``device``): the way in and out.

    ``backend`` is ``"numpy"``, ``"array_api_strict"``, ``"torch"``, ``"jax"`` or a namespace module.
    Dtypes and values are kept exactly; other leaves are left as they are. Moving float64 arrays to JAX
    turns on ``jax_enable_x64`` (else JAX would round them to float32). ``device``: the library's
    (``"cuda:0"``, ``jax.devices()[1]``), by default its own.

    >>> import numpy as np
    >>> to_backend((np.ones(2), 3.0), "numpy")
    (array([1., 1.]), 3.0)
    """
    xp = resolve_backend("to_backend", backend)
    name = namespace_name(xp)
    if name == "jax" and _has_float64(tree):
        import jax

        jax.config.update("jax_enable_x64", True)

    def move(a: Any) -> Any:
        # a C-ordered copy of its own (0-d kept 0-d): a tensor's numpy view, a JAX array's read-only one, and the
        # numpy array that jax.device_put and array_api_strict would share on the CPU are never handed on
        host = np.array(to_numpy(a), order="C")
        if xp is np:
            return host
        if name == "torch":
            import torch

            if host.dtype.name == "bfloat16":  # ml_dtypes' (JAX's): torch's from its 16 bits
                t = torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
            else:
                t = torch.from_numpy(host)
            return t if device is None else t.to(device)
        if name == "jax":
            import jax

            return jax.device_put(host, device)
        return xp.asarray(host) if device is None else xp.asarray(host, device=device)

    if device is not None:  # a device the library refuses: refused before anything moves
        try:
            move(np.zeros(0))
        except Exception as err:
            said = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            kind = "a jax.Device, e.g. jax.devices()[0]" if name == "jax" else "its name, e.g. 'cpu'"
            raise E.bad_argument("to_backend", "device", device, f"a device of {name} ({kind}; {said})") from None
    return tree_map_arrays(move, tree)


def _has_float64(tree: Any) -> bool:
    found = []
    tree_map_arrays(lambda a: found.append(dtype_name(a.dtype) == "float64"), tree)
    return any(found)
