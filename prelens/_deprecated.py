"""Names that moved or merged in 0.4.0: each still works for one release, with a warning naming the new one."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

#: The release that removes every name listed through :func:`moved`.
REMOVED_IN = "0.5.0"


def moved(
    module: str, names: Mapping[str, tuple[str, Any]], gone: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for old names: ``names[old] = (new dotted name, the object)``.

    ``gone[old]`` is the text of the ``AttributeError`` for a name removed in an earlier release.

    >>> import warnings
    >>> getattr_ = moved("pkg", {"old": ("pkg.new", 42)})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = getattr_("old")
    >>> value, str(caught[0].message)
    (42, 'pkg.old is deprecated: use pkg.new (pkg.old goes in prelens 0.5.0)')
    """

    def __getattr__(name: str) -> Any:
        if gone is not None and name in gone:
            raise AttributeError(gone[name])
        if name in names:
            new, value = names[name]
            warnings.warn(
                f"{module}.{name} is deprecated: use {new} ({module}.{name} goes in prelens {REMOVED_IN})",
                DeprecationWarning,
                stacklevel=2,
            )
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def now_in(package: Any, names: str | list[str]) -> dict[str, tuple[str, Any]]:
    """The table entries of names that kept their name and moved to ``package``: ``name -> (package.name, obj)``.

    >>> import prelens.core
    >>> now_in(prelens.core, "tree_map")["tree_map"][0]
    'prelens.core.tree_map'
    """
    listed = names.split() if isinstance(names, str) else names
    return {n: (f"{package.__name__}.{n}", getattr(package, n)) for n in listed}
