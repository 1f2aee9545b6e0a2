"""Model files: a lens's construction and its parameters in one file, loaded without pickle or code.

A model file is a checkpoint (:func:`prelens.io.save_checkpoint`) whose metadata holds, beside the caller's own,
``{"prelens-model": {"format", "version", "prelens", "lens"}}``: the lens as a description of its constructor calls
(:mod:`prelens.io._describe`), which :func:`load_model` makes again, by name only. The file is untrusted: what
bounds it is in docs/model-files.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from prelens import errors as E
from prelens._version import __version__
from prelens.backend._arrays import has_dtype, is_array, resolve_backend
from prelens.core import _registry as C
from prelens.core._tree import structure_mismatch, tree_leaves, tree_paths
from prelens.io import _checkpoint as checkpoint
from prelens.io import _describe as D
from prelens.tambara._trilens import as_lens_or_trilens

__all__ = ["LoadedModel", "load_model", "save_model"]

FORMAT = "prelens-model"
VERSION = 1
KEY = "prelens-model"
USER_KEY = "metadata"
MAX_DESCRIPTION_CHARS = 1_000_000


class LoadedModel(NamedTuple):
    """What :func:`load_model` returns: the rebuilt ``lens``, its ``params`` and the saved ``metadata``.

    >>> LoadedModel._fields
    ('lens', 'params', 'metadata')
    """

    lens: Any
    params: Any
    metadata: dict[str, Any]


def save_model(
    path: str | os.PathLike[str], lens: Any, params: Any, *, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write ``lens`` (how it was built) and its ``params`` to one file, atomically.

    ``lens`` must be built by prelens's constructors or by functions registered with
    :func:`prelens.io.register_constructor`, else :class:`~prelens.errors.ArgumentError` names the part that cannot
    be described; ``params`` (arrays of any array-API library) must fit what ``lens.init`` makes, if it has one,
    else :class:`~prelens.errors.StructureError`. ``metadata`` (JSON-able) comes back from :func:`load_model`. All
    is checked before the file is written; a failed save leaves the file that was at ``path`` as it was.

    >>> import os, tempfile
    >>> from prelens.nn import mlp
    >>> net = mlp(4, [8, 3], "relu")
    >>> path = os.path.join(tempfile.mkdtemp(), "net.prelens")
    >>> save_model(path, net, net.init(0), metadata={"classes": ["a", "b", "c"]})
    >>> load_model(path).lens
    mlp(4→8→3, relu)
    """
    target = checkpoint.target_path("save_model", path)
    as_lens_or_trilens("save_model", "lens", lens)
    if metadata is not None and (not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata)):
        raise E.bad_argument("save_model", "metadata", E.describe(metadata), "a mapping with string keys, or None")
    user = dict(metadata or {})
    try:
        json.dumps(user, allow_nan=False, default=checkpoint.json_number)
    except (TypeError, ValueError, RecursionError) as err:
        raise E.bad_argument("save_model", "metadata", E.describe(metadata), f"JSON-serialisable ({err})") from None
    try:
        desc = D.describe(lens)
    except D.DescriptionError as why:
        raise _undescribable(repr(lens), why.where, why.what) from None
    text = json.dumps(desc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if len(text) > MAX_DESCRIPTION_CHARS:
        why_long = f"a description of {len(text):,} characters (at most {MAX_DESCRIPTION_CHARS:,})"
        raise _undescribable(repr(lens), "lens", why_long)
    try:
        again = D.rebuild(json.loads(text))
    except D.DescriptionError as bad:
        raise _not_rebuilt(repr(lens), f"nothing: at {bad.where}, {bad.what}") from None
    if repr(again) != repr(lens):
        raise _not_rebuilt(repr(lens), repr(again))
    if getattr(lens, "init_fn", None) is not None:
        found = _misfit(lens.init(0), params)
        if found is not None:
            raise E.StructureError(
                f"save_model: the parameters do not fit {E.short_name(repr(lens), 80)} (compared with what its "
                f"init makes): {found}"
            )
    model = {"format": FORMAT, "version": VERSION, "prelens": __version__, "lens": text}
    checkpoint.save_checkpoint(target, params, metadata={KEY: model, USER_KEY: user})


def _misfit(expected: Any, got: Any) -> str | None:
    """Where ``got`` differs from ``expected`` in structure, shape or array dtype (None if nowhere)."""
    found = structure_mismatch(expected, got, shapes=True)
    if found is not None:
        return found
    for (where, a), (_, b) in zip(tree_paths(expected), tree_paths(got)):
        if isinstance(a, np.ndarray) and (not is_array(b) or not has_dtype(b, a.dtype)):
            return E.at_path(where, E.describe(a), E.describe(b))
    return None


def load_model(path: str | os.PathLike[str], *, backend: Any = "numpy") -> LoadedModel:
    """Rebuild the lens saved by :func:`save_model`, with its parameters and metadata.

    Nothing in the file is executed or unpickled: the lens is rebuilt by calling the registered constructors it
    names. ``backend`` (as in :func:`prelens.backend.to_backend`) is the library the parameters are returned in.
    Raises :class:`prelens.errors.ModelFileError` (a :class:`~prelens.errors.CheckpointError`) for a missing,
    damaged or hostile file, an unknown constructor, a format version this prelens does not read, or parameters
    that do not fit the lens.

    >>> import os, tempfile
    >>> from prelens import forward
    >>> from prelens.nn import mlp
    >>> net = mlp(2, [3, 1])
    >>> params = net.init(0)
    >>> path = os.path.join(tempfile.mkdtemp(), "net.prelens")
    >>> save_model(path, net, params)
    >>> lens, loaded, metadata = load_model(path)
    >>> x = np.ones((5, 2))
    >>> bool((forward(lens, loaded, x) == forward(net, params, x)).all()), metadata
    (True, {})
    """
    name = checkpoint.file_path("load_model", path)
    xp = resolve_backend("load_model", backend)
    model, user = _header(name, _read(checkpoint.load_metadata, name))  # a missing file: "no such file"
    try:
        description = json.loads(model["lens"], parse_constant=_no_constant)
    except RecursionError:
        raise _file_bad(name, f"the description is nested more than {C.MAX_DEPTH} deep") from None
    except ValueError as err:
        raise _file_bad(name, f"the description is not strict JSON ({E.short_name(str(err), 120)})") from None
    params = _read(checkpoint.load_checkpoint, name)
    stored = sum(int(np.size(x)) for x in tree_leaves(params))
    try:
        with C.budget(stored):
            lens = D.rebuild(description)
            has_init = getattr(lens, "init_fn", None) is not None
            like = lens.init(D.BudgetedGenerator(np.random.PCG64(0))) if has_init else None
    except D.DescriptionError as bad:
        raise _file_bad(name, f"at {bad.where} of the description: {bad.what}") from None
    except C.OverBudget as over:
        detail = f"the description needs more {over.what} than the {stored:,} stored parameter numbers justify"
        raise _file_bad(name, detail) from None
    if like is not None:
        found = _misfit(like, params)
        if found is not None:
            raise _file_bad(name, f"the stored parameters do not fit the lens it describes: {found}")
    if xp is not np:
        params = checkpoint._in_backend("load_model", params, backend)
    return LoadedModel(lens, params, user)


def _no_constant(word: str) -> Any:
    raise ValueError(word)  # NaN, Infinity: not numbers JSON allows


def _read(read: Callable[[str], Any], path: str) -> Any:
    """``read(path)``, a :class:`CheckpointError` raised as a :class:`ModelFileError` (without its own prefix)."""
    try:
        return read(path)
    except E.CheckpointError as err:
        detail = str(err).removeprefix(f"checkpoint {path}: ").removeprefix("cannot be read: ")
        raise _file_bad(path, detail) from None


def _header(path: str, meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    model = meta.get(KEY)
    if model is None:
        raise _file_bad(
            path,
            "it holds parameters only (a prelens checkpoint, as `prelens train --save` wrote before 0.2.0), without "
            "the description of its lens; load it with prelens.io.load_checkpoint(path, like=lens.init(0)) for the "
            "lens you built, then write a model file with prelens.io.save_model(path, lens, params)",
        )
    if not isinstance(model, dict) or model.get("format") != FORMAT:
        raise _file_bad(path, "the model header is not a prelens model description")
    version = model.get("version")
    if type(version) is not int or version != VERSION:
        writer = E.short_name(str(model.get("prelens", "?")), 40)
        newer = type(version) is int and version > VERSION
        hint = (
            f"written by prelens {writer}; upgrade prelens to read it" if newer else "no prelens wrote such a version"
        )
        detail = f"model format version {version!r}, and this prelens reads version {VERSION} ({hint})"
        raise _file_bad(path, detail)
    text = model.get("lens")
    if not isinstance(text, str):
        raise _file_bad(path, "the model header has no description of its lens")
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise _file_bad(path, f"the description has {len(text):,} characters (at most {MAX_DESCRIPTION_CHARS:,})")
    user = meta.get(USER_KEY, {})
    if not isinstance(user, dict):
        raise _file_bad(path, "the metadata is not a mapping")
    return model, user


def _undescribable(lens: str, where: str, what: str) -> E.ArgumentError:
    return E.ArgumentError(
        f"save_model: cannot describe {E.short_name(lens, 80)}: at {E.short_name(where, 100)}: {what}. "
        "A model file stores how each lens was built, not code: build this part in a function decorated with "
        "@prelens.io.register_constructor (its arguments JSON-like: numbers, strings, lists, dtypes, small "
        "arrays, lenses), and register it in the process that loads the file too"
    )


def _not_rebuilt(lens: str, got: str) -> E.ArgumentError:
    return E.ArgumentError(
        f"save_model: the description of {E.short_name(lens, 80)} rebuilds a different lens, "
        f"{E.short_name(got, 80)}: a registered constructor gives different lenses for the same arguments "
        "(does it read global state, or were its arguments changed after the call?)"
    )


def _file_bad(path: str, detail: str) -> E.ModelFileError:
    return E.ModelFileError(f"model file {path}: cannot be read: {detail}")
