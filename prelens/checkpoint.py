"""Deprecated: checkpoints moved to :mod:`prelens.io` (this module goes in prelens 0.5.0).

``prelens.checkpoint.save`` is :func:`prelens.io.save_checkpoint`, ``load`` is
:func:`prelens.io.load_checkpoint`; ``load_metadata`` and ``register_namedtuple`` keep their
names in :mod:`prelens.io`. Each old name still works, with a ``DeprecationWarning``.

>>> import warnings
>>> import prelens.checkpoint
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     load = prelens.checkpoint.load
>>> str(caught[0].message)
'prelens.checkpoint.load is deprecated: use prelens.io.load_checkpoint (prelens.checkpoint.load goes in prelens 0.5.0)'
"""

from prelens import io as _io
from prelens._deprecated import moved as _moved

__all__: list[str] = []

__getattr__ = _moved(
    "prelens.checkpoint",
    {
        "save": ("prelens.io.save_checkpoint", _io.save_checkpoint),
        "load": ("prelens.io.load_checkpoint", _io.load_checkpoint),
        "load_metadata": ("prelens.io.load_metadata", _io.load_metadata),
        "register_namedtuple": ("prelens.io.register_namedtuple", _io.register_namedtuple),
    },
)
