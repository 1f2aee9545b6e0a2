"""Every message template of ``prelens.errors``, triggered through the public API and matched.

``TEMPLATES`` lists every function in ``prelens.errors`` that returns an exception;
``CASES`` gives, for each, a call of the public API that must raise it, the class
raised and a pattern its text must match. While a case runs, the template is
wrapped in a spy, so the test also proves that the message came from *that*
template (and not from a lookalike composed elsewhere).
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import prelens.errors as E
from prelens import (
    PreLens,
    add_l,
    batch_n,
    chain,
    faithful,
    from_tamb,
    id_pre_lens,
    load_model,
    nn,
    save_model,
    to_tamb,
    vec_lens,
    vjp,
)
from prelens import forward as run_forward
from prelens.cli import main as cli_main
from prelens.core import tree_sum
from prelens.core._tree import check_structure
from prelens.datasets import CharVocab, load_iris, text_windows
from prelens.io import load_checkpoint, register_constructor, save_checkpoint
from prelens.learn import adam, sgd
from prelens.testing import check_lens_equal, check_no_alias, check_pure, check_vjp
from prelens.train import EarlyStopping, fit

from ._model_files import craft

X3 = np.ones((2, 3))


def _returns_exception(f: Callable[..., Any]) -> bool:
    ret = typing.get_type_hints(f, vars(E)).get("return")
    return isinstance(ret, type) and issubclass(ret, BaseException)


#: Every message template: the functions of ``prelens.errors`` that return an exception.
TEMPLATES = sorted(
    name
    for name, f in vars(E).items()
    if inspect.isfunction(f) and f.__module__ == E.__name__ and not name.startswith("_") and _returns_exception(f)
)


# ------------------------------------------------------------ small fixtures


def _small_mha() -> Any:
    return nn.multi_head_attention(4, 2)


def _overflowing_fit() -> Any:
    """Finite data whose squared error overflows to inf on the first step."""
    with np.errstate(over="ignore"):
        return fit(
            nn.linear(3, 1), nn.mse, (np.full((4, 3), 1e200), np.ones((4, 1))), 1, 4, sgd(0.1), 0, progress=False
        )


def _bad_ds() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """A user's lens whose ``bwd`` cuts the input delta to one column."""
    return PreLens(lambda p, s: (s, 2 * s), lambda m, da: ((), da[..., :1]), name="halve")


def _finite_only_here() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """A lens finite at its point and nowhere near it: finite differences have nothing to go on."""
    return PreLens(lambda p, s: ((), s if (s == 1.0).all() else s * np.nan), lambda m, da: ((), da), name="spike")


def _in_place() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    def fwd(p: Any, s: Any) -> Any:
        s *= 2
        return (), s

    return PreLens(fwd, lambda m, da: ((), 2 * da), name="in_place")


def _closure() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """A ``bwd`` that reads the last input from a closure, not from its residue."""
    last = {}

    def fwd(p: Any, s: Any) -> Any:
        last["s"] = s.copy()
        return (), s * s

    return PreLens(fwd, lambda m, da: ((), 2 * last["s"] * da), name="closure")


def _no_pair_fwd() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    return PreLens(lambda p, s: 2 * s, lambda m, da: ((), 2 * da), name="twice")


def _no_pair_bwd() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    return PreLens(lambda p, s: ((), 2 * s), lambda m, da: 2 * da, name="twice")


def _picky() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    def fwd(p: Any, s: Any) -> Any:
        raise KeyError("missing")

    return PreLens(fwd, lambda m, da: ((), da), name="picky")


def _deep(n: int = 3000) -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    lens = id_pre_lens
    for _ in range(n):
        lens = lens >> id_pre_lens
    return lens


def _deep_params(n: int = 3000) -> Any:
    p: Any = ()
    for _ in range(n):
        p = ((), p)
    return p


def _cli_checkpoint_without_save(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["train", "mlp", "--checkpoint-every", "2"])
    raise E.PrelensError(capsys.readouterr().err + f" (exit {code})")


_FLAKY = iter(range(10**9))


def _flaky() -> PreLens[Any, Any, Any, Any, Any, Any, Any, Any]:
    """A registered constructor that reads global state: each call names its lens anew."""
    return PreLens(lambda p, s: ((), s), lambda m, da: ((), da), name=f"flaky{next(_FLAKY)}")


_flaky = register_constructor(_flaky, name="errors.flaky")


class Unregistered(NamedTuple):
    a: Any


def _with_file(tmp: Path, write: Callable[[str], None], then: Callable[[str], Any]) -> Callable[[], Any]:
    path = str(tmp / "c.npz")

    def run() -> Any:
        write(path)
        return then(path)

    return run


def _bogus_header(path: str) -> None:
    header = {"format": "prelens-checkpoint", "version": 1, "tree": {"kind": "bogus"}, "metadata": {}}
    np.savez(path, __prelens__=np.array(json.dumps(header)))


def _damaged_iris(monkeypatch: pytest.MonkeyPatch) -> Any:
    import prelens.datasets.iris as iris

    class Fake:
        def files(self, package: str) -> Fake:
            return self

        def joinpath(self, *parts: str) -> Fake:
            return self

        def read_text(self, encoding: str) -> str:
            return "sepal_length,species\n1.0,setosa\n"

    iris._read.cache_clear()
    monkeypatch.setattr(iris, "resources", Fake())
    try:
        return load_iris()
    finally:
        monkeypatch.undo()
        iris._read.cache_clear()


def _plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> Any:
    import sys

    from prelens.train import History

    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    try:
        return History(loss=[1.0]).plot()
    finally:
        monkeypatch.undo()


def _resume_a_plain_checkpoint(tmp_path: Path) -> Any:
    save_checkpoint(tmp_path / "plain.npz", {"params": np.zeros((3, 1)), "opt_state": ()})
    return fit(nn.linear(3, 1), nn.mse, (X3, np.ones((2, 1))), 1, 2, sgd(0.1), progress=False,
               resume=tmp_path / "plain.npz")  # fmt: skip


class Case(NamedTuple):
    run: Callable[..., Any]  # takes the pytest fixtures it names
    raises: type[BaseException]
    match: str


def _case(run: Callable[..., Any], raises: type[BaseException], match: str) -> Case:
    return Case(run, raises, match)


D32 = nn.dense(3, 2)

CASES: dict[str, Case] = {
    "list_length_error": _case(
        lambda: run_forward(vec_lens(3, faithful.activ_t), [(), (), ()], [0.1, 0.2]),
        E.StructureError,
        r"^vec_lens\(3, activ_t\): input must be a list of length 3, got length 2$",
    ),
    "not_a_pair": _case(
        lambda: add_l.fwd((), (1.0,)),
        E.StructureError,
        r"^add_l: its input must be a pair \(s1, s2\), got \(float 1\.0,\)$",
    ),
    # trees
    "tree_mismatch": _case(
        lambda: check_structure((0.0, 0.0), (1.0,), what="params of f >> g"),
        E.StructureError,
        r"^params of f >> g: at <root>: expected tuple of 2, got tuple of 1$",
    ),
    # lenses: inputs, parameters, constructor arguments
    "must_be": _case(
        lambda: faithful.mk_para(None),
        E.StructureError,
        r"^mk_para: its argument must be a pair \(bias, weight\), got None$",
    ),
    "lens_shape_error": _case(
        lambda: nn.softmax.fwd((), np.ones((8, 0))),
        E.ShapeError,
        r"^softmax: input: expected a float array \(\.\.\., n\) with n >= 1, got f64\[8,0\]$",
    ),
    "lens_dtype_error": _case(
        lambda: nn.token_embedding(4, 2).fwd(np.ones((4, 2)), np.array([[1.0, 2.0]])),
        E.DTypeError,
        r"^token_embedding\(4, 2\): token ids: expected an integer array, got f64\[1,2\]$",
    ),
    "flag_needs": _case(
        _cli_checkpoint_without_save,
        E.PrelensError,
        r"^prelens train mlp: --checkpoint-every needs --save PATH\n \(exit 2\)$",
    ),
    "unwritable_path": _case(
        lambda tmp_path: fit(
            nn.linear(3, 1),
            nn.mse,
            (X3, np.ones((2, 1))),
            1,
            2,
            sgd(0.1),
            0,
            checkpoint_path=str(tmp_path / "no" / "c.npz"),
        ),
        E.ArgumentError,
        r"^fit: checkpoint_path cannot be written to '.*c\.npz': the directory .*no does not exist$",
    ),
    "not_positive_int": _case(lambda: nn.dense(0, 2), E.StructureError, r"^dense: n_in must be a positive int, got 0$"),
    "int_below": _case(lambda: batch_n(0, nn.tanh), E.ArgumentError, r"^batch_n: n must be an int >= 1, got 0$"),
    "not_one_of": _case(
        lambda: nn.encoder_block(4, 2, 8, norm="mid"),  # type: ignore[arg-type]
        E.StructureError,
        r"^encoder_block: norm must be 'post' or 'pre', got 'mid'$",
    ),
    "out_of_range": _case(
        lambda: nn.token_embedding(4, 2).fwd(np.ones((4, 2)), np.array([[1, 7]])),
        E.StructureError,
        r"^token_embedding\(4, 2\): token ids must lie in \[0, 4\), got 7 at index \(0, 1\)$",
    ),
    # what fwd and bwd return and are given
    "bad_residue": _case(
        lambda: nn.tanh.bwd(None, np.ones(2)),
        E.StructureError,
        r"^tanh: the residue must be the one this lens's forward pass returned, got None$",
    ),
    "too_deep": _case(
        lambda: run_forward(_deep(), _deep_params(), 1.0),
        E.DepthError,
        r"nested too deeply: running it exceeded Python's recursion limit \(\d+ frames\)\. Build it flatter: .*"
        r"run a TriLens with from_tamb\(\.\.\.\), which loops over its steps",
    ),
    "not_a_residue_of": _case(
        lambda: nn.attention_weights(nn.multi_head_attention(4, 2), ()),
        E.StructureError,
        r"^multi_head_attention\(4, heads=2\): residue is not a residue of this model \(IndexError: ",
    ),
    # law checks
    "law_violation": _case(
        lambda: check_lens_equal("tanh is relu", nn.tanh, nn.relu, (), X3),
        E.LawError,
        r"^law 'tanh is relu' fails: forward outputs differ at <root>:\n  left:  f64\[2,3\] .*\n  right: f64\[2,3\]",
    ),
    # training
    "non_finite": _case(
        lambda: faithful.train_step(
            faithful.make_mlp(3, [2, 1]),
            faithful.init_mlp(3, [2, 1], np.random.default_rng(0)),
            np.full((2, 3), np.nan),
            [[1.0], [1.0]],
            0.1,
        ),
        E.NonFiniteError,
        r"^train_step: loss: non-finite value at <root>$",
    ),
    "bad_argument": _case(lambda: sgd(-1), E.ArgumentError, r"^sgd: lr must be a finite number > 0, got -1$"),
    # the training kit in fit (issue 14)
    "missing_extra": _case(
        _plot_without_matplotlib,
        E.MissingExtraError,
        r"^History\.plot needs matplotlib, which is not installed: pip install 'prelens\[plot\]'$",
    ),
}


#: Messages composed where they are raised (used in one place only): matched, with no template to spy on.
MESSAGES: dict[str, Case] = {
    # the law kit's own messages (prelens.testing._pure)
    "law_raised": _case(
        lambda: check_lens_equal("x", nn.tanh, nn.dense(3, 3), (), X3),
        E.LawError,
        r"^law 'x' fails: right side, forward raised StructureError: dense\(3→3, tanh\): parameters: expected DenseParams",
    ),
    "vjp_violation": _case(
        lambda: check_vjp(PreLens(nn.tanh.fwd, lambda m, da: ((), 2 * da), name="wrong"), (), X3),
        E.LawError,
        r"^check_vjp: wrong: bwd is not the reverse derivative of fwd: <da, J·δ> by central differences = ",
    ),
    "vjp_needs_float64": _case(
        lambda: check_vjp(nn.tanh, (), np.ones(3, np.float32)),
        E.LawError,
        r"^check_vjp: tanh: needs float64 leaves, got f32\[3\] at s: finite differences are taken in float64, "
        r"so check the lens built in float64 \(dtype=np\.float64\)$",
    ),
    "vjp_delta_structure": _case(
        lambda: check_vjp(nn.dense(3, 2, input_delta=False), D32.init(0), X3),
        E.LawError,
        r"^check_vjp: dense\(3→2, tanh, input_delta=False\): bwd's input delta does not have the structure of the "
        r"input: at <root>: expected f64\[2,3\], got None$",
    ),
    "vjp_bwd_misfit": _case(
        lambda: check_vjp(_bad_ds(), (), X3),
        E.LawError,
        r"^check_vjp: halve: bwd's deltas do not fit the parameters and input: halve: bwd returned a ds",
    ),
    "vjp_no_difference": _case(
        lambda: check_vjp(_finite_only_here(), (), X3),
        E.LawError,
        r"^check_vjp: spike: fwd gave non-finite outputs at every step of the finite differences along s: "
        r"check at a point where the lens is finite$",
    ),
    "vjp_delta_dtype": _case(
        lambda: check_vjp(
            PreLens(lambda p, s: ((), 2 * s), lambda m, da: ((), (2 * da).astype(np.float32)), "f32"), (), X3
        ),
        E.LawError,
        r"^check_vjp: f32: bwd's input delta at ds has dtype f32, expected f64 \(a delta has the dtype of its primal\)$",
    ),
    "pure_mutated": _case(
        lambda: check_vjp(_in_place(), (), X3.copy()),
        E.LawError,
        r"^check_vjp: in_place: fwd mutated its input s at path s \(a lens never writes into its arguments: "
        r"compute into fresh arrays\)$",
    ),
    "pure_not_residue_only": _case(
        lambda: check_pure(_closure(), (), X3),
        E.LawError,
        r"^check_pure: closure: bwd uses something besides its residue: after two forward passes, the backward "
        r"passes run in reverse order gave another ds than each run alone \(everything bwd needs must travel",
    ),
    "residue_aliases": _case(
        lambda: check_no_alias(PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square"), (), X3),
        E.LawError,
        r"^check_no_alias: square: the residue at m aliases the caller's input s at path s: writing into it between "
        r"the forward and the backward pass changed bwd's ds \(a residue keeps its own copy of what it needs from p "
        r"and s\)$",
    ),
    "list too short": _case(
        lambda: vec_lens(2, nn.tanh).fwd([(), ()], [np.ones(2)]),
        E.StructureError,
        r"^vec_lens\(2, tanh\): input: expected list of 2, got \[f64\[2\]\]$",
    ),
    "list too long": _case(
        lambda: run_forward(vec_lens(2, faithful.activ_t), [(), ()], [0.1, 0.2, 0.3]),
        E.StructureError,
        r"^vec_lens\(2, activ_t\): input must be a list of length 2, got length 3$",
    ),
    "chain of nothing": _case(lambda: chain(), E.ArgumentError, r"^chain: needs at least one lens$"),
    "no initializer": _case(
        lambda: from_tamb(to_tamb(D32)).init(0),
        E.PrelensError,
        r"^from_tamb\(to_tamb\(dense\(3→2, tanh\)\)\): cannot create parameters: this lens was built without an "
        r"initializer",
    ),
    "fwd not a pair": _case(
        lambda: run_forward(_no_pair_fwd(), (), X3),
        E.StructureError,
        r"^twice: fwd must return a pair \(m, a\) \(residue, output\), got f64\[2,3\]$",
    ),
    "bwd not a pair": _case(
        lambda: vjp(_no_pair_bwd(), (), X3)[1](X3),
        E.StructureError,
        r"^twice: bwd must return a pair \(dp, ds\), got f64\[2,3\]$",
    ),
    "delta misfit": _case(
        lambda: vjp(chain(D32, _bad_ds()), [D32.init(0), ()], X3)[1](np.ones((2, 2))),
        E.StructureError,
        r"^halve: bwd returned a ds that does not fit the input s of its forward pass: at <root>: "
        r"expected f64\[2,2\], got f64\[2,1\].*\n  in chain\(dense\(3→2, tanh\), halve\): part 1 \(halve\)$",
    ),
    "a part fails": _case(
        lambda: run_forward(nn.tanh >> _picky(), ((), ()), X3),
        E.StructureError,
        r"^picky: the forward pass failed on the input f64\[2,3\]: KeyError: 'missing'\n  in tanh >> picky: part 1",
    ),
    "params not a pair": _case(
        lambda: (nn.tanh >> nn.tanh).fwd([()], X3),
        E.StructureError,
        r"^tanh >> tanh: parameters: expected tuple of 2, got \[\(\)\]$",
    ),
    "a TriLens's pass fails": _case(
        lambda: from_tamb(faithful.make_mlp(3, [2, 1])).bwd([[None, None], [None]], [1.0]),
        E.StructureError,
        r"^from_tamb\(make_mlp\(3, \[2, 1\]\)\): the backward pass failed on \(residue, output delta\) = "
        r"\(\[\[None, None\], \[None\]\], \[float 1\.0\]\) \(StructureError: .*\); a TriLens runs as a program",
    ),
    # checkpoints and model files (prelens.io)
    "checkpoint: no such file": _case(
        lambda tmp_path: load_checkpoint(tmp_path / "missing.npz"),
        E.CheckpointError,
        r"^checkpoint .*missing\.npz: cannot be read: no such file$",
    ),
    "checkpoint: corrupt node": _case(
        lambda tmp_path: _with_file(tmp_path, _bogus_header, load_checkpoint)(),
        E.CheckpointError,
        r"^checkpoint .*c\.npz: cannot be read: at <root>: unknown node kind 'bogus'$",
    ),
    "checkpoint: another model's": _case(
        lambda tmp_path: _with_file(
            tmp_path,
            lambda p: save_checkpoint(p, (np.zeros(2), [1.5])),
            lambda p: load_checkpoint(p, like=(np.ones(3), [0.0])),
        )(),
        E.CheckpointError,
        r"^checkpoint .*c\.npz does not fit the model: at \[0\]: expected f64\[3\], got f64\[2\]$",
    ),
    "checkpoint: leaf not storable": _case(
        lambda tmp_path: save_checkpoint(tmp_path / "c.npz", {"f": len}),
        E.CheckpointError,
        r"^cannot save a checkpoint: at \['f'\]: cannot store a leaf of type builtin_function_or_method$",
    ),
    "checkpoint: no such directory": _case(
        lambda tmp_path: save_checkpoint(tmp_path / "no" / "dir" / "c.npz", [np.ones(2)]),
        E.CheckpointError,
        r"^cannot write checkpoint .*c\.npz: the directory .*dir does not exist; nothing was written$",
    ),
    "checkpoint: unregistered named tuple": _case(
        lambda tmp_path: _with_file(tmp_path, lambda p: save_checkpoint(p, Unregistered(1.0)), load_checkpoint)(),
        E.CheckpointError,
        r"^checkpoint .*c\.npz: at <root>: named tuple .*Unregistered is not registered; pass like=",
    ),
    "save_model: undescribable": _case(
        lambda tmp_path: save_model(tmp_path / "m.prelens", _no_pair_fwd(), ()),
        E.ArgumentError,
        r"^save_model: cannot describe twice: at lens: the lens twice was not made by a registered constructor\. "
        r"A model file stores how each lens was built, not code: build this part in a function decorated with "
        r"@prelens\.io\.register_constructor",
    ),
    "save_model: not rebuilt": _case(
        lambda tmp_path: save_model(tmp_path / "m.prelens", _flaky(), ()),
        E.ArgumentError,
        r"^save_model: the description of flaky\d+ rebuilds a different lens, flaky\d+: a registered constructor "
        r"gives different lenses for the same arguments",
    ),
    "save_model: params misfit": _case(
        lambda tmp_path: save_model(tmp_path / "m.prelens", D32, nn.dense(3, 3).init(0)),
        E.StructureError,
        r"^save_model: the parameters do not fit dense\(3→2, tanh\) \(compared with what its init makes\): "
        r"at \.weight: expected shape \(3, 2\), got shape \(3, 3\)$",
    ),
    "register_constructor: name taken": _case(
        lambda: [register_constructor(f, name="errors.taken") for f in (_flaky, _no_pair_fwd)],
        E.ArgumentError,
        r"^register_constructor: the name 'errors\.taken' is already registered for .*_flaky; pass another name=",
    ),
    "model file: no such file": _case(
        lambda tmp_path: load_model(tmp_path / "missing.prelens"),
        E.ModelFileError,
        r"^model file .*missing\.prelens: cannot be read: no such file$",
    ),
    "model file: parameters only": _case(
        lambda tmp_path: _with_file(tmp_path, lambda p: save_checkpoint(p, [np.ones(2)]), load_model)(),
        E.ModelFileError,
        r"^model file .*c\.npz: cannot be read: it holds parameters only \(a prelens checkpoint",
    ),
    "model file: newer version": _case(
        lambda tmp_path: load_model(craft(tmp_path / "m.prelens", {"value": "prelens.copy_l"}, header={"version": 2})),
        E.ModelFileError,
        r"^model file .*m\.prelens: cannot be read: model format version 2, and this prelens reads version 1 "
        r"\(written by prelens 0\.2\.0; upgrade prelens to read it\)$",
    ),
    "model file: params misfit": _case(
        lambda tmp_path: load_model(
            craft(tmp_path / "m.prelens", {"call": "prelens.nn.dense", "args": [3, 2]}, nn.dense(3, 3).init(0))
        ),
        E.ModelFileError,
        r"^model file .*m\.prelens: cannot be read: the stored parameters do not fit the lens it describes: "
        r"at \.weight: expected shape \(3, 2\), got shape \(3, 3\)$",
    ),
    # the optimisers' own messages (prelens.learn)
    "optim_leaf_dtype": _case(
        lambda: sgd(0.1).init([np.arange(3)]),
        E.DTypeError,
        r"^sgd: cannot update the parameter at \[0\]: expected floats, got i64\[3\] \(float32 or float64 arrays, or numbers\)$",
    ),
    "optim_delta_dtype": _case(
        lambda: sgd(0.1).update([np.ones(3, complex)], (), [np.ones(3)]),
        E.DTypeError,
        r"^sgd: grads at \[0\]: expected real numbers, got c128\[3\]$",
    ),
    "optim_mismatch": _case(
        lambda: sgd(0.1).update(
            type("Pair", (tuple,), {})((np.ones(2),)), (), type("Pair", (tuple,), {})((np.ones(2),))
        ),
        E.StructureError,
        r"^sgd: parameters, grads and state do not share a structure the optimisers rebuild",
    ),
    "optim_bad_state": _case(
        lambda: adam(0.1).update([np.ones(2)], (), [np.ones(2)]),
        E.StructureError,
        r"^adam: the optimiser state must be an AdamState \(from adam\.init\), got \(\)$",
    ),
    "bad_schedule_value": _case(
        lambda: sgd(lambda t: -0.5).update(np.ones(2), sgd(lambda t: -0.5).init(np.ones(2)), np.ones(2)),
        E.ArgumentError,
        r"^sgd: the lr schedule gave -0\.5 at step 0; a schedule must give a finite number >= 0$",
    ),
    # fit's own messages (composed in prelens.train)
    "training_non_finite": _case(
        _overflowing_fit,
        E.TrainingNonFiniteError,
        r"^training stopped: the loss became non-finite at epoch 1/1, batch 1/1 \(loss = inf.*\)\n"
        r"fit: the last good parameters, optimiser state and history are attached",  # a note: not in str(err)
    ),
    "data_non_finite": _case(
        lambda: fit(nn.linear(3, 1), nn.mse, (X3, np.array([[1.0], [np.nan]])), 1, 2, sgd(0.1), 0, progress=False),
        E.NonFiniteError,
        r"^fit: data\[1\] holds NaN or infinity, first in row 1; clean or drop such rows first$",
    ),
    "data_cast_overflow": _case(
        lambda: fit(
            nn.linear(3, 1, dtype=np.float32), nn.mse, (np.full((2, 3), 1e300), np.ones((2, 1))), 1, 2, sgd(0.1)
        ),
        E.NonFiniteError,
        r"^fit: data\[0\] overflows when cast to the model's float32, first in row 0; scale the data first$",
    ),
    "metrics_unmeasured": _case(
        lambda: fit(nn.linear(3, 1), nn.mse, (X3, np.ones((2, 1))), 1, 2, sgd(0.1), metrics={"m": lambda *a: 0.0}),
        E.ArgumentError,
        r"^fit: metrics has nothing to be measured on: give validation=\(xs, targets\), or train_metrics=True to "
        r"measure them on the training data$",
    ),
    "monitor_unknown": _case(
        lambda: fit(nn.linear(3, 1), nn.mse, (X3, np.ones((2, 1))), 1, 2, sgd(0.1), callbacks=[EarlyStopping()]),
        E.ArgumentError,
        r"^fit: EarlyStopping monitors 'val_loss', which this fit does not record; it records 'loss'$",
    ),
    "resume_refused": _case(
        _resume_a_plain_checkpoint,
        E.CheckpointError,
        r"^checkpoint .*plain\.npz: cannot resume from it: it holds no training position \(not written by fit, or "
        r"by prelens before 0\.2\.0\); load its parameters with prelens\.io\.load_checkpoint and pass them as params= "
        r"and opt_state=$",
    ),
    # single-use messages once templates of prelens.errors, now composed where they are raised
    "tree_sum_empty": _case(lambda: tree_sum([]), E.StructureError, r"^tree_sum: cannot sum an empty list of trees$"),
    "not_positive": _case(
        lambda: nn.layer_norm(4, eps=0.0), E.StructureError, r"^layer_norm: eps must be positive, got 0\.0$"
    ),
    "heads_not_divisible": _case(
        lambda: nn.multi_head_attention(6, 4),
        E.StructureError,
        r"^multi_head_attention: d_model must be divisible by the number of heads: d_model=6, n_heads=4$",
    ),
    "with_params_path": _case(
        lambda: _small_mha().fwd(_small_mha().init(0)._replace(W_O=np.zeros((4, 2))), np.zeros((1, 3, 4))),
        E.ShapeError,
        r"\n  the parameters given to multi_head_attention\(4, heads=2\) differ from what its init makes at "
        r"\.W_O: expected shape \(4, 4\), got shape \(4, 2\)$",
    ),
    "attention_probes_missing": _case(
        lambda: nn.attention_weights(D32, ()),
        E.StructureError,
        r"^dense\(3→2, tanh\): has no attention lenses to read weights from",
    ),
    "data_damaged": _case(
        _damaged_iris, E.PrelensError, r"^prelens/datasets/data/iris\.csv is damaged: reinstall prelens$"
    ),
    "not_in_vocabulary": _case(
        lambda: CharVocab.from_text("ab").encode("abc"),
        E.StructureError,
        r"^CharVocab\.encode: character 'c' is not in the vocabulary$",
    ),
    "text_too_short": _case(
        lambda: text_windows(np.arange(3), 5, 2),
        E.StructureError,
        r"^text_windows: need block >= 1 and at least block\+1 tokens, got block=5, 3 tokens$",
    ),
}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_message(name: str, request: pytest.FixtureRequest) -> None:
    case = MESSAGES[name]
    fixtures = {arg: request.getfixturevalue(arg) for arg in inspect.signature(case.run).parameters}
    with pytest.raises(case.raises, match=case.match):
        case.run(**fixtures)


def test_every_template_has_a_case() -> None:
    """A new template needs a case here; a case for a removed template must go."""
    assert set(CASES) == set(TEMPLATES), (
        f"templates without a case: {sorted(set(TEMPLATES) - set(CASES))}; "
        f"cases without a template: {sorted(set(CASES) - set(TEMPLATES))}"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_template_message(name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    original = getattr(E, name)
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(E, name, spy)
    fixtures = {arg: request.getfixturevalue(arg) for arg in inspect.signature(case.run).parameters}
    if "monkeypatch" in fixtures:
        fixtures["monkeypatch"] = pytest.MonkeyPatch()
    with pytest.raises(case.raises, match=case.match) as info:
        case.run(**fixtures)
    assert calls, f"the error came from elsewhere, not from the template {name}: {info.value}"
    assert isinstance(info.value, E.PrelensError)
