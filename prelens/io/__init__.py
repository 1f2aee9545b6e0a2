"""``prelens.io``: checkpoints and model files (no pickle, atomic writes, bounded loading).

* a **checkpoint** is a tree of parameters (arrays, numbers, tuples, lists, dicts, named tuples) with JSON metadata:
  :func:`save_checkpoint`, :func:`load_checkpoint`, :func:`load_metadata`; named tuples of your own load once
  :func:`register_namedtuple` allows them;
* a **model file** is a checkpoint that also stores how its lens was built, so that :func:`load_model` rebuilds the
  lens with no code in the file: :func:`save_model`, :func:`load_model` (a :class:`LoadedModel`); lenses of your own
  functions are described once :func:`register_constructor` (defined in :mod:`prelens.core`) wraps those functions.

>>> import os, tempfile
>>> import numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "state.npz")
>>> save_checkpoint(path, {"w": np.eye(2), "step": 3}, metadata={"note": "hi"})
>>> load_checkpoint(path)["step"], load_metadata(path)
(3, {'note': 'hi'})
"""

from prelens._deprecated import moved as _moved
from prelens.core._registry import register_constructor
from prelens.io._checkpoint import load_checkpoint, load_metadata, register_namedtuple, save_checkpoint
from prelens.io._model_file import LoadedModel, load_model, save_model

__all__ = [
    "LoadedModel",
    "load_checkpoint",
    "load_metadata",
    "load_model",
    "register_constructor",
    "register_namedtuple",
    "save_checkpoint",
    "save_model",
]

#: The names of 0.4's first drafts: each works for one release, with a warning naming the new one.
__getattr__ = _moved(
    "prelens.io",
    {"save": ("prelens.io.save_checkpoint", save_checkpoint), "load": ("prelens.io.load_checkpoint", load_checkpoint)},
)
