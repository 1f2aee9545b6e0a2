"""How each lens was built: the constructor calls that a model file stores instead of code.

Every public constructor of prelens is wrapped by :func:`constructor` (users' by
:func:`register_constructor`), which records the registered name and arguments of the call
beside the lens it returns, in a weak side table (lenses stay frozen values). The model-file
encoding that reads these records is :mod:`prelens.io._describe`.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, overload

import numpy as np

from prelens import errors as E
from prelens.core import _args

P = ParamSpec("P")
R = TypeVar("R")

#: The name a constructor is registered under -> the (recording) function.
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class Call:
    """How one lens was made: the constructor's registered name and its arguments (as given)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


#: Lens -> how it was made. Weak keys: the record dies with its lens.
_MADE: weakref.WeakKeyDictionary[Any, Call] = weakref.WeakKeyDictionary()

#: Limits of a description (a model file is untrusted input).
MAX_DEPTH = 100  #: lenses nested in lenses (a long sequence belongs in ``chain``)
MAX_NODES = 200_000  #: JSON values in one description
MAX_CALLS_BASE = 20_000  #: constructor calls while rebuilding, plus 10 per stored parameter number
MAX_DRAWS_BASE = 65_536  #: random numbers that ``init`` may draw while loading, plus 2 per stored number
MAX_SIZE_BASE = 65_536  #: an int argument of prelens's own constructors, or the stored numbers if more

_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")


# ---------------------------------------------------------------- recording


@dataclass
class _Budget:
    """What rebuilding one untrusted description may spend (see :func:`budget`)."""

    calls: int
    draws: int
    size: int


BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("prelens_construction_budget", default=None)


class OverBudget(Exception):  # a signal between two modules, never shown to users
    """Raised while loading when a description needs more than its file's parameters justify."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


@contextmanager
def budget(stored: int) -> Iterator[_Budget]:
    """Bound the work of rebuilding a description that came with ``stored`` parameter numbers."""
    b = _Budget(MAX_CALLS_BASE + 10 * stored, MAX_DRAWS_BASE + 2 * stored, max(MAX_SIZE_BASE, stored))
    token = BUDGET.set(b)
    try:
        yield b
    finally:
        BUDGET.reset(token)


def _recording(fn: Callable[P, R], name: str) -> Callable[P, R]:
    """``fn`` recording its calls, registered as ``name``."""

    @functools.wraps(fn)
    def made(*args: P.args, **kwargs: P.kwargs) -> R:
        b = BUDGET.get()
        if b is not None:
            b.calls -= 1
            if b.calls < 0:
                raise OverBudget("constructor calls")
        out = fn(*args, **kwargs)
        if all(out is not a for a in (*args, *kwargs.values())):  # an argument handed back keeps its own record
            try:
                snapshot = tuple(_snapshot(a, 0) for a in args), {k: _snapshot(v, 0) for k, v in kwargs.items()}
                _MADE[out] = Call(name, *snapshot)
            except TypeError:  # a result that cannot be weakly referenced is not a lens: nothing to record
                pass
        return out

    made.__prelens_constructor__ = name  # type: ignore[attr-defined]
    _CONSTRUCTORS[name] = made
    return made


def _snapshot(x: Any, depth: int) -> Any:
    """``x`` with its lists, tuples and dicts copied (a caller may change them after the call)."""
    if depth > MAX_DEPTH:
        return x
    if type(x) in (list, tuple):
        return type(x)(_snapshot(v, depth + 1) for v in x)
    if type(x) is dict:
        return {k: _snapshot(v, depth + 1) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.size <= _SNAPSHOT_ELEMENTS:
        return x.copy()  # statistics handed to normalize, say: the record keeps the values of the call
    return x


#: Arrays up to this size are copied into a record (a larger one could not be described anyway).
_SNAPSHOT_ELEMENTS = 200_000


#: Packages whose public names are re-exported at the top level (``prelens.pre_compose``).
_TOP_LEVEL = ("prelens.core", "prelens.tambara")


def public_name(module: str, name: str) -> str:
    """``("prelens.nn._mlp", "mlp")`` -> ``prelens.nn.mlp``: the public module that re-exports it."""
    public = ".".join(itertools.takewhile(lambda part: not part.startswith("_"), module.split(".")))
    return f"{'prelens' if public in _TOP_LEVEL else public}.{name}"


def constructor(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark one of prelens's own public functions that return lenses (registered by its public name)."""
    return _recording(fn, public_name(fn.__module__, fn.__qualname__))


@overload
def register_constructor(fn: Callable[P, R], /, *, name: str | None = None) -> Callable[P, R]: ...
@overload
def register_constructor(
    fn: None = None, /, *, name: str | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def register_constructor(
    fn: Callable[P, R] | None = None, /, *, name: str | None = None
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Let model files hold the lenses that ``fn`` builds: record its calls, and find it by name on load.

    A decorator (``@register_constructor`` or ``@register_constructor(name="mylib.block")``) on a
    function returning a lens; its arguments must be JSON-like (numbers, strings, lists, tuples, dicts,
    dtypes, small arrays, lenses). The loading process must register the same name (by default
    ``module.qualname``) before ``load_model``.

    >>> import numpy as np
    >>> from prelens import PreLens
    >>> from prelens.io import load_model, save_model
    >>> @register_constructor(name="docs.scale")
    ... def scale(c: float) -> PreLens:
    ...     return PreLens(lambda p, s: ((), c * s), lambda m, da: ((), c * da), name=f"scale({c})")
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "scale.prelens")
    >>> save_model(path, scale(3.0), ())
    >>> lens, params, metadata = load_model(path)
    >>> lens, lens.fwd(params, np.ones(2))[1]
    (scale(3.0), array([3., 3.]))
    """

    if name is not None:
        _check_name(name)

    def register(f: Callable[P, R]) -> Callable[P, R]:
        _args.function("register_constructor", "fn", f)
        key = name if name is not None else f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', '')}"
        _check_name(key)
        old = _CONSTRUCTORS.get(key)
        if old is not None and _origin(old) != _origin(f):
            raise E.ArgumentError(
                f"register_constructor: the name {key!r} is already registered for {_origin(old)}; "
                "pass another name=..."
            )
        return _recording(f, key)

    if fn is None:
        return register
    return register(fn)


def _check_name(key: Any) -> None:
    if not isinstance(key, str) or not _NAME.match(key) or len(key) > 200:
        expected = "dotted Python identifiers (pass name='mylib.block')"
        raise E.bad_argument("register_constructor", "name", key, expected)
    if key == "prelens" or key.startswith("prelens."):
        raise E.bad_argument("register_constructor", "name", key, "a name outside prelens's own ('prelens.…')")


def _origin(f: Callable[..., Any]) -> str:
    inner = getattr(f, "__wrapped__", f)
    return f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', '?')}"


#: Where 0.3's public names moved in 0.4 (the optimisers to ``learn``, the faithful level out of ``nn``).
_MOVED_PREFIXES = (("prelens.optim.", "prelens.learn."), ("prelens.nn.", "prelens.faithful."))


#: Constructors renamed after a release that wrote model files naming them: old name -> new name.
#: Only the lookup knows the old name (a file saved by 0.4.0 says ``prelens.nn.rematerialize``);
#: the registry, and so every file written now, holds the new one.
_RENAMED = {"prelens.nn.rematerialize": "prelens.nn.remat"}


def names_of(name: str) -> list[str]:
    """``name``, then where an older file that stored it finds it now (files name things publicly).

    >>> names_of("prelens.nn.make_mlp")
    ['prelens.nn.make_mlp', 'prelens.faithful.make_mlp']
    >>> names_of("prelens.nn.rematerialize")
    ['prelens.nn.rematerialize', 'prelens.nn.remat']
    """
    if name in _RENAMED:
        return [name, _RENAMED[name]]
    return [name] + [new + name.removeprefix(old) for old, new in _MOVED_PREFIXES if name.startswith(old)]


def first_found(table: Mapping[str, R], name: str) -> R | None:
    """The entry of ``table`` under ``name`` or, for a 0.3 name, under its 0.4 name (see :func:`names_of`)."""
    return next((table[n] for n in names_of(name) if n in table), None)


def registered(name: str) -> Callable[..., Any] | None:
    """The constructor registered as ``name`` (or under its 0.3 name, ``prelens.nn.make_mlp``, or its
    name before a rename, ``prelens.nn.rematerialize``), or None."""
    return first_found(_CONSTRUCTORS, name)


def call_of(lens: Any) -> Call | None:
    """How ``lens`` was made, if a constructor made it."""
    try:
        return _MADE.get(lens)
    except TypeError:
        return None
