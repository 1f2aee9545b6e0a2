"""Every public name is fuzzed, or exempt for a stated reason.

The public surface is ``__all__`` of ``prelens``, ``prelens.nn``, ``prelens.learn``,
``prelens.train``, ``prelens.datasets`` and ``prelens.checkpoint`` (``prelens.testing``
is the test kit, exempt as a whole). A name counts as fuzzed when a fuzz entry names
it in its ``covers`` (or, for a constructor entry, is its ``make``):

* a lens (a PreLens or TriLens value) needs a case of ``test_fuzz_lenses.py``
  (forward and backward pass);
* a function that makes lenses needs one there too, and a constructor entry
  (``test_fuzz_constructors.py``, ``test_fuzz_functions.py``);
* any other function or class needs a constructor or function entry, or a case of
  ``test_fuzz_training.py``.

A new public name fails :func:`test_every_public_name_is_fuzzed` until it is
fuzzed or added to :data:`EXEMPT` with a reason.
"""

from __future__ import annotations

import inspect
from typing import Any

import prelens
import prelens.datasets
import prelens.learn
import prelens.nn
import prelens.train
from prelens import PreLens, TriLens

from . import test_fuzz_training
from .test_fuzz_constructors import CTORS
from .test_fuzz_functions import FUNCS
from .test_fuzz_lenses import CASES

MODULES = [
    prelens,
    prelens.core,
    prelens.tambara,
    prelens.show,
    prelens.io,
    prelens.backend,
    prelens.nn,
    prelens.learn,
    prelens.train,
    prelens.datasets,
    prelens.faithful,
    prelens.nn.composed,
]

_ERRORS = "an error class: raised by prelens, never called with user data"
_RECORD = "a plain record type (a named tuple or dataclass of results or parameters); what takes it is fuzzed"
_CONSTANT = "a constant"

#: Public names that are not fuzzed, and why.
EXEMPT: dict[str, str] = {
    **{
        f"prelens.{n}": _ERRORS
        for n in ("DTypeError", "LawError", "NonFiniteError", "PrelensError", "ShapeError", "StructureError")
    },
    "prelens.backend.BACKENDS": _CONSTANT + " (the backend names to_backend takes; to_backend is fuzzed)",
    "prelens.train.compile_step": "needs the jax extra, absent from the main suite: its every argument check "
    "(model, loss, optimizer, mesh, axis, a batch that does not split) is tested in tests_peers/test_compiled.py",
    "prelens.train.CompiledStep": _RECORD + " (what compile_step returns; see compile_step)",
    "prelens.__version__": _CONSTANT,
    "prelens.core.ANY": _CONSTANT + " (the pattern every value fits)",
    "prelens.core.LIKE_OUTPUT": _CONSTANT + " (the pattern of a delta shaped like the output)",
    "prelens.core.AnyLens": "a type alias",
    "prelens.core.Arr": _RECORD + " (a declared pattern: the lenses that declare it are fuzzed)",
    "prelens.core.Expects": _RECORD + " (a lens's declarations: the lenses that declare it are fuzzed)",
    "prelens.tambara.Trimbara": "a Protocol (a type for annotations and isinstance)",
    "prelens.faithful.Para": _RECORD + " (a neuron's parameters: fuzzed as corrupted parameters)",
    "prelens.tambara.TriProfunctor": "a Protocol (a type for annotations and isinstance)",
    "prelens.tambara.Program": "the free Trimbara module: made empty and grown by its methods, which only record steps; "
    "what runs a program (from_tamb, interpret, Shapes.of, Cost.of) is fuzzed",
    "prelens.Trimbara": "a Protocol (a type for annotations and isinstance)",
    "prelens.learn.Optimizer": "a Protocol (a type for annotations)",
    "prelens.train.Metric": "a type alias",
    "prelens.show.Stage": _RECORD + " (a row of summary's table)",
    "prelens.show.Summary": _RECORD + " (what summary returns)",
    "prelens.io.LoadedModel": _RECORD + " (what load_model returns)",
    "prelens.train.FitResult": _RECORD + " (what fit returns)",
    "prelens.train.History": _RECORD + " (what fit returns)",
    "prelens.datasets.Split": _RECORD + " (what the loaders return)",
    "prelens.nn.Activation": "the class of the activation lenses: pointwise makes one (fuzzed), and each is fuzzed",
    **{
        f"prelens.nn.{n}": _RECORD + " (parameters: the lenses check them, fuzzed as corrupted parameters)"
        for n in (
            "AttentionParams",
            "ConvParams",
            "DecoderBlockParams",
            "DenseParams",
            "EncoderBlockParams",
            "EncoderDecoderParams",
            "FeedForwardParams",
            "LMParams",
            "LayerNormParams",
            "RecurrentParams",
        )
    },
    **{
        f"prelens.nn.composed.{n}": _RECORD + " (parameters: the lenses check them, fuzzed as corrupted parameters)"
        for n in ("FaithfulAttentionParams", "HeadParams")
    },
    "prelens.nn.ACTIVATIONS": _CONSTANT + " (the activation lenses by name; each is fuzzed)",
    "prelens.nn.MASKED": _CONSTANT,
    **{
        f"prelens.datasets.{n}": _CONSTANT
        for n in ("DATASETS", "IRIS_CLASSES", "IRIS_FEATURES", "MNIST1D_VERSION", "TASKS", "TEXTS", "TOY_XS", "TOY_YS")
    },
    "prelens.datasets.iris_arrays": "takes no argument",
    "prelens.datasets.load_toy": "takes no argument",
    "prelens.datasets.cache_dir": "takes no argument (it reads $PRELENS_CACHE and $XDG_CACHE_HOME: tests/test_datasets.py)",
    "prelens.train.retain_freed_memory": "takes no argument (a process setting; tests/test_runtime.py runs it)",
    "prelens.nn.composed.causal_mask": "takes no argument (the lens it makes has a forward/backward case)",
    "prelens.nn.DropoutKey": _RECORD + " (dropout's parameter: fuzzed as corrupted parameters of dropout)",
    "prelens.train.Callback": "a Protocol (a type for annotations); the callbacks fit takes are fuzzed with fit",
    "prelens.datasets.GLYPHS": _CONSTANT + " (a read-only array: the bitmaps make_glyphs draws)",
    "prelens.learn.Schedule": "a base class (for isinstance and annotations); each schedule made from it is fuzzed",
    "prelens.nn.composed.weighted_sum": "takes no argument (the lens it makes has a forward/backward case)",
    "prelens.nn.flatten": "takes no argument (the lens it makes has a forward/backward case)",
    "prelens.nn.composed.window_max": "takes no argument (the lens it makes has a forward/backward case)",
    "prelens.nn.composed.window_mean": "takes no argument (the lens it makes has a forward/backward case)",
}


def _public() -> list[tuple[str, Any]]:
    return [(f"{m.__name__}.{n}", getattr(m, n)) for m in MODULES for n in m.__all__]


def _makes_lenses(obj: Any) -> bool:
    """A function whose return annotation is a lens type (PreLens, AnyLens, AnyTriLens, Activation)."""
    if not inspect.isfunction(obj):
        return False
    ret = str(inspect.signature(obj).return_annotation)
    return any(t in ret for t in ("Lens", "Activation"))


def _ids(objs: Any) -> set[int]:
    return {id(o) for o in objs}


LENS_FUZZED = _ids(o for c in CASES for o in c.covers)
CALL_FUZZED = _ids(o for c in [*CTORS, *FUNCS] for o in c.targets) | _ids(test_fuzz_training.COVERS)


def test_every_public_name_is_fuzzed() -> None:
    missing = []
    for name, obj in _public():
        if name in EXEMPT and "argument" in EXEMPT[name] and _makes_lenses(obj) and id(obj) not in LENS_FUZZED:
            missing.append(f"{name}: makes a lens without a forward/backward case in test_fuzz_lenses.py")
        if name in EXEMPT:
            continue
        if isinstance(obj, (PreLens, TriLens)):
            if id(obj) not in LENS_FUZZED:
                missing.append(f"{name}: a lens without a forward/backward case in test_fuzz_lenses.py")
        elif _makes_lenses(obj):
            if id(obj) not in LENS_FUZZED:
                missing.append(f"{name}: makes lenses, but none has a forward/backward case in test_fuzz_lenses.py")
            if id(obj) not in CALL_FUZZED:
                missing.append(f"{name}: a constructor without an entry in test_fuzz_constructors.py")
        elif callable(obj):
            if id(obj) not in CALL_FUZZED:
                missing.append(f"{name}: a function or class without a fuzz entry")
        else:
            missing.append(f"{name}: a value: fuzz what takes it, and list it in EXEMPT")
    assert not missing, "public names neither fuzzed nor exempt:\n" + "\n".join(missing)


def test_exemptions_name_public_names() -> None:
    public = dict(_public())
    stale = sorted(n for n in EXEMPT if n not in public)
    assert not stale, f"EXEMPT names what is not (or no longer) public: {stale}"
    both = sorted(n for n in EXEMPT if id(public[n]) in CALL_FUZZED)
    assert not both, f"fuzzed and exempt at once (drop the exemption): {both}"
    assert all(reason.strip() for reason in EXEMPT.values())
