"""Every error prelens raises, and every message template, in one place.

All errors derive from :class:`PrelensError`, so ``except PrelensError`` catches
anything the library reports on purpose. Each concrete error also derives from
the builtin exception a Python user would expect (``ValueError``, ``TypeError``,
``AssertionError``), so existing ``except`` clauses keep working.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ArgumentError",
    "CheckpointError",
    "DTypeError",
    "LawError",
    "ModelFileError",
    "NonFiniteError",
    "PrelensError",
    "ShapeError",
    "StructureError",
]


class PrelensError(Exception):
    """Base class of every error raised on purpose by prelens.

    >>> from prelens import chain
    >>> try:
    ...     chain()
    ... except PrelensError as err:
    ...     print(type(err).__name__, "-", err)
    ArgumentError - chain: needs at least one lens
    """


class StructureError(PrelensError, ValueError):
    """A tree (parameters, residues, inputs, deltas) has the wrong structure.

    The message names the tree path of the first misfit:

    >>> from prelens.core import check_structure
    >>> check_structure((1.0, [2.0]), (1.0, 2.0), what="params")
    Traceback (most recent call last):
    ...
    prelens.errors.StructureError: params: at [1]: expected list of 1, got float 2.0
    """


class ShapeError(PrelensError, ValueError):
    """An array has the wrong shape for the lens it is given to.

    >>> import numpy as np
    >>> from prelens.nn import dense
    >>> layer = dense(3, 2)
    >>> layer.fwd(layer.init(0), np.ones((2, 4)))
    Traceback (most recent call last):
    ...
    prelens.errors.ShapeError: dense(3→2, tanh): input: expected f64[...,3], got f64[2,4]
    """


class DTypeError(PrelensError, TypeError):
    """An array has the wrong dtype for the lens it is given to.

    >>> import numpy as np
    >>> from prelens.nn import token_embedding
    >>> emb = token_embedding(5, 2)
    >>> emb.fwd(emb.init(0), np.ones((1, 2)))
    Traceback (most recent call last):
    ...
    prelens.errors.DTypeError: token_embedding(5, 2): token ids: expected an integer array, got f64[1,2]
    """


class LawError(PrelensError, AssertionError):
    """A categorical law or a gradient check failed.

    >>> import numpy as np
    >>> from prelens import PreLens
    >>> from prelens.testing import check_vjp
    >>> half = PreLens(lambda p, s: (s.copy(), s * s), lambda m, da: ((), da * m), name="half_square")
    >>> check_vjp(half, (), np.array([1.0, 2.0]))
    Traceback (most recent call last):
    ...
    prelens.errors.LawError: check_vjp: half_square: bwd is not the reverse derivative of fwd: ...
    """


class NonFiniteError(PrelensError, FloatingPointError):
    """A loss, a gradient or a parameter became NaN or infinite.

    >>> import numpy as np
    >>> from prelens import PreLens
    >>> from prelens.nn import generate
    >>> nan_lm = PreLens(lambda p, ids: ((), np.full((*ids.shape, 3), np.nan)), lambda m, da: ((), None))
    >>> generate(nan_lm, (), np.array([[0]]), 1)
    Traceback (most recent call last):
    ...
    prelens.errors.NonFiniteError: generate: the logits of step 0: non-finite value at <root>
    """


class CheckpointError(PrelensError, OSError):
    """A checkpoint file is missing, corrupt, or belongs to another model.

    >>> from prelens.io import load_checkpoint
    >>> load_checkpoint("/no/such/dir/params.npz")
    Traceback (most recent call last):
    ...
    prelens.errors.CheckpointError: checkpoint /no/such/dir/params.npz: cannot be read: no such file
    """


class ArgumentError(PrelensError, ValueError):
    """A function was given an invalid setting (a learning rate, a fraction, a size).

    >>> from prelens.learn import sgd
    >>> sgd(-1.0)
    Traceback (most recent call last):
    ...
    prelens.errors.ArgumentError: sgd: lr must be a finite number > 0, got -1.0
    """


def describe(x: Any) -> str:
    """A short description of a value for error messages: ``f64[3,4]``, ``tuple of 2``."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
        lib = "" if isinstance(x, np.ndarray) else f" ({type(x).__module__.split('.')[0].replace('jaxlib', 'jax')})"
        return f"{dtype_name(x.dtype)}[{','.join(map(str, x.shape))}]{lib}"
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return f"{type(x).__name__} {x!r}"
    if x is None:
        return "None"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return f"{type(x).__name__}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    if isinstance(x, dict):
        return f"dict with keys {sorted(map(str, x))}"
    if isinstance(x, type):
        return f"the class {x.__name__}"
    return type(x).__name__


#: numpy's one-letter kind of a dtype name without its size (``bfloat16`` is a float).
DTYPE_KINDS = {"float": "f", "bfloat": "f", "int": "i", "uint": "u", "bool": "b", "complex": "c"}


def dtype_name(dtype: Any) -> str:
    """``float64 -> f64``, ``int32 -> i32``, ``bfloat16 -> bf16``: the short names used in reprs."""
    if not isinstance(dtype, np.dtype):
        try:
            dtype = np.dtype(dtype)
        except TypeError:  # another library's dtype (torch.float32, ...): by its name
            name = str(dtype).rpartition(".")[2]
            kind = "bf" if name.startswith("bfloat") else DTYPE_KINDS.get(name.rstrip("0123456789"), "?")
            return f"{kind}{name.lstrip('abcdefghijklmnopqrstuvwxyz')}"
    if dtype.name == "bfloat16":  # ml_dtypes' (JAX's): numpy calls its kind V
        return "bf16"
    return f"{dtype.kind}{dtype.itemsize * 8}"


def describe_tree(x: Any, limit: int = 160) -> str:
    """A compact picture of a tree of values: ``(f64[32,4], [f64[4], ()])``.

    Named tuples show their fields: ``DenseParams(weight=f64[4,16], bias=f64[16])``.
    """
    return short_name(_describe_tree(x, depth=0), limit)


def _describe_tree(x: Any, depth: int) -> str:
    named = isinstance(x, tuple) and hasattr(x, "_fields")
    if depth > 4 and isinstance(x, (tuple, list)):
        return f"{type(x).__name__}(…)" if named else "(…)" if isinstance(x, tuple) else "[…]"
    if named:
        fields = ", ".join(f"{k}={_describe_tree(c, depth + 1)}" for k, c in zip(x._fields, x))
        return f"{type(x).__name__}({fields})"
    if isinstance(x, tuple):
        inner = ", ".join(_describe_tree(c, depth + 1) for c in x)
        return f"({inner}{',' if len(x) == 1 else ''})"
    if isinstance(x, list):
        head = ", ".join(_describe_tree(c, depth + 1) for c in x[:3])
        return f"[{head}, …] (length {len(x)})" if len(x) > 3 else f"[{head}]"
    return describe(x)


def mark(err: BaseException, **facts: Any) -> None:
    """Attach private facts to an error (``_prelens_where``: context added; ``_prelens_foreign``: wrapped)."""
    vars(err).update(facts)


def path_str(path: str) -> str:
    """A tree path as shown in messages; the root is ``<root>``."""
    return path or "<root>"


# ---------------------------------------------------------------- templates
# Messages given in more than one place (or by a command): each returns the exception, the caller
# raises it; ``tests/test_error_messages.py`` triggers every one through the public API.


def short_name(name: str, limit: int = 120) -> str:
    """A lens name cut to ``limit`` characters (deep composites have very long names).

    >>> short_name("x" * 200, 10)
    'xxxxxxxxx…'
    """
    return name if len(name) <= limit else name[: limit - 1] + "…"


def at_path(path: str, expected: str, got: str) -> str:
    """The fragment naming a tree path and what differs there: ``at [1].weight: expected f64[3], got f64[2]``."""
    return f"at {path_str(path)}: expected {expected}, got {got}"


def tree_mismatch(what: str, found: str) -> StructureError:
    """``found`` is an :func:`at_path` fragment from :func:`prelens.core.structure_mismatch`."""
    return StructureError(f"{what}: {found}")


def must_be(lens: str, what: str, expected: str, got: str) -> StructureError:
    """A value of the wrong kind: ``dense(3→2): input must be a numpy array f64[...,3], got None``."""
    return StructureError(f"{lens}: {what} must be {expected}, got {got}")


def lens_shape_error(lens: str, what: str, expected: str, got: str) -> ShapeError:
    return ShapeError(f"{lens}: {what}: expected {expected}, got {got}")


def lens_dtype_error(lens: str, what: str, expected: str, got: str) -> DTypeError:
    return DTypeError(f"{lens}: {what}: expected {expected}, got {got}")


def not_positive_int(fn: str, what: str, value: Any) -> StructureError:
    return StructureError(f"{fn}: {what} must be a positive int, got {value!r}")


def int_below(fn: str, what: str, value: Any, least: int) -> ArgumentError:
    return ArgumentError(f"{fn}: {what} must be an int >= {least}, got {value!r}")


def not_one_of(
    fn: str, what: str, options: Sequence[Any], value: Any, hint: str = "", *, or_none: bool = False
) -> StructureError:
    """A setting that is not one of its ``options``: ``norm must be 'post' or 'pre', got 'mid'``."""
    opts = " or ".join(map(repr, options)) if len(options) == 2 else f"one of {tuple(options)!r}"
    return StructureError(f"{fn}: {what} must be {opts}{' or None' if or_none else ''}, got {value!r}{hint}")


def out_of_range(lens: str, what: str, allowed: str, got: Any, where: str = "") -> StructureError:
    """Integer data outside its range: ``token ids must lie in [0, 6), got 7 at index (0, 1)``."""
    return StructureError(f"{lens}: {what} must lie in {allowed}, got {got}{f' at index {where}' if where else ''}")


def list_length_error(lens: str, what: str, expected: int, got: int | str) -> StructureError:
    """``got``: the length of the list given, or a description of what was given instead."""
    return StructureError(
        f"{lens}: {what} must be a list of length {expected}, got {f'length {got}' if isinstance(got, int) else got}"
    )


def bad_residue(lens: str, got: Any) -> StructureError:
    """``bwd`` was given something that its own ``fwd`` cannot have returned."""
    return StructureError(
        f"{lens}: the residue must be the one this lens's forward pass returned, got {describe_tree(got)}"
    )


class DepthError(PrelensError, RecursionError):
    """A lens is nested too deeply for Python's call stack."""


def too_deep(lens: str) -> DepthError:
    err = DepthError(
        f"{short_name(lens)}: nested too deeply: running it exceeded Python's recursion limit "
        f"({sys.getrecursionlimit()} frames). Build it flatter: run a TriLens with from_tamb(...), which loops "
        "over its steps, not in a nest of closures (interpret(tri, id_pre_lens)); compose long sequences "
        "with chain(...) rather than nested >>; or use the whole-array lenses of prelens.nn"
    )
    mark(err, _prelens_where=True)
    return err


def not_a_pair(lens: str, what: str, layout: str, got: Any) -> StructureError:
    err = StructureError(f"{lens}: {what} must be a pair {layout}, got {describe_tree(got)}")
    mark(err, _prelens_where=True)
    return err


def not_a_residue_of(model: str, why: str) -> StructureError:
    return StructureError(f"{model}: residue is not a residue of this model ({why})")


def law_violation(law: str, where: str, path: str, left: Any, right: Any) -> LawError:
    return LawError(
        f"law '{law}' fails: {where} differ at {path_str(path)}:\n  left:  {_short(left)}\n  right: {_short(right)}"
    )


def non_finite(what: str, path: str) -> NonFiniteError:
    return NonFiniteError(f"{what}: non-finite value at {path_str(path)}")


def _short(x: Any) -> str:
    if isinstance(x, np.ndarray):
        with np.printoptions(precision=6, threshold=8, edgeitems=2):
            return f"{describe(x)} {x!s}".replace("\n", " ")
    return repr(x)


def bad_argument(where: str, name: str, value: Any, expected: str) -> ArgumentError:
    return ArgumentError(f"{where}: {name} must be {expected}, got {value!r}")


class TrainingNonFiniteError(NonFiniteError):
    """Training met a non-finite loss or gradient; the last good state rides along.

    ``params`` and ``opt_state`` are the last finite parameters and optimiser
    state, ``history`` the training history up to the failing step (``None`` by default, so that the
    error unpickles: pickle calls it with the message, then restores the three).
    """

    def __init__(self, message: str, params: Any = None, opt_state: Any = None, history: Any = None) -> None:
        super().__init__(message)
        self.params = params
        self.opt_state = opt_state
        self.history = history


class ModelFileError(CheckpointError):
    """A model file cannot be read: not one, damaged, hostile, or of an unknown format version.

    >>> from prelens import load_model
    >>> load_model("/no/such/dir/m.prelens")
    Traceback (most recent call last):
    ...
    prelens.errors.ModelFileError: model file /no/such/dir/m.prelens: cannot be read: no such file
    """


def unwritable_path(where: str, name: str, path: str, why: str) -> ArgumentError:
    """A file ``path`` (e.g. ``--save``) that cannot be written, found before any work is done."""
    return ArgumentError(f"{where}: {name} cannot be written to {path!r}: {why}")


def flag_needs(command: str, flag: str, needed: str) -> ArgumentError:
    return ArgumentError(f"{command}: {flag} needs {needed}")


class MissingExtraError(PrelensError, ImportError):
    """An optional dependency is not installed (matplotlib for ``History.plot``): the message names the extra."""


def missing_extra(fn: str, module: str, extra: str) -> MissingExtraError:
    return MissingExtraError(f"{fn} needs {module}, which is not installed: pip install 'prelens[{extra}]'")
