"""Errors raised while running lenses name the lens that failed, what it got, and where it sits."""

import functools
import operator
import re

import numpy as np
import pytest

from prelens import NonFiniteError, PreLens, ShapeError, StructureError, chain, forward, id_pre_lens, vjp
from prelens.testing._strategies import linear_vec, tanh_vec

V3 = np.ones(3)


def test_a_mismatch_inside_a_composite_names_the_part_its_input_and_where_it_sits():
    l = linear_vec(3, 2) >> linear_vec(3, 2)
    with pytest.raises(StructureError) as info:
        forward(l, l.init(0), V3)
    text = str(info.value)
    assert text.startswith("linear_vec(3→2): the forward pass failed on the input f64[2]: ValueError")
    assert text.endswith("\n  in linear_vec(3→2) >> linear_vec(3→2): part 1 (linear_vec(3→2))")


def test_chain_mismatch_names_the_part():
    c = chain(linear_vec(3, 2), tanh_vec, linear_vec(3, 2))
    with pytest.raises(
        StructureError,
        match=r"(?s)^linear_vec\(3→2\): the forward pass failed on the input f64\[2\]"
        r".*\n  in chain\(.*\): part 2 \(linear_vec\(3→2\)\)$",
    ):
        forward(c, c.init(0), V3)


def test_parameters_of_the_wrong_structure_are_named_with_their_path():
    l = linear_vec(3, 2) >> tanh_vec
    with pytest.raises(
        StructureError, match=r"^linear_vec\(3→2\) >> tanh_vec: parameters: expected tuple of 2, got \[f64\[2,3\]\]$"
    ):
        forward(l, [np.ones((2, 3))], V3)
    deep = chain(tanh_vec, linear_vec(3, 2) >> tanh_vec)
    with pytest.raises(StructureError, match=r"^chain\(.*\): parameters at \[1\]: expected tuple of 2, got \(\)$"):
        forward(deep, [(), ()], V3)


def test_parallel_needs_pairs():
    l = tanh_vec @ tanh_vec
    with pytest.raises(StructureError, match=r"^tanh_vec @ tanh_vec: input: expected tuple of 2, got f64\[3\]$"):
        forward(l, ((), ()), V3)


def test_errors_of_prelens_keep_their_class_and_gain_where_once():
    def fwd(p, s):
        raise ShapeError("picky: input: expected f64[5], got f64[3]")

    picky = PreLens(fwd, lambda dm, da: ((), da), name="picky")
    l = (tanh_vec >> picky) >> tanh_vec
    with pytest.raises(
        ShapeError, match=r"(?s)^picky: input: expected f64\[5\].*in tanh_vec >> picky >> tanh_vec: part 0.1 \(picky\)$"
    ) as info:
        forward(l, l.init(0), V3)
    assert str(info.value).count("\n  in ") == 1


def test_arithmetic_errors_are_non_finite_errors():
    l = linear_vec(3, 2) >> tanh_vec
    with (
        np.errstate(all="raise"),
        pytest.raises(
            NonFiniteError,
            match=r"(?s)^linear_vec\(3→2\): the forward pass failed on the input f64\[3\]: FloatingPointError: overflow",
        ),
    ):
        forward(l, ((), np.full((2, 3), 1e200)), np.full(3, 1e200))


def test_a_bwd_returning_the_wrong_structure_is_named():
    bad = PreLens(lambda p, s: ((), s), lambda dm, da: da, name="bad")  # forgot the (dp, ds) pair
    _, pullback = vjp(tanh_vec >> bad, ((), ()), np.ones(3))
    with pytest.raises(StructureError, match=r"^bad: bwd must return a pair \(dp, ds\), got f64\[3\]"):
        pullback(np.ones(3))


def test_a_fwd_returning_the_wrong_structure_is_named():
    bad = PreLens(lambda p, s: s, lambda dm, da: ((), da), name="bad")
    with pytest.raises(
        StructureError, match=r"^bad: fwd must return a pair \(m, a\) \(residue, output\), got f64\[3\]"
    ):
        forward(bad, (), np.ones(3))


# ------------------------------------------- a user's bwd of the wrong structure


from typing import Any, NamedTuple  # noqa: E402

from prelens import DTypeError, backward, batch_n, from_tamb, vec_lens  # noqa: E402
from prelens.errors import DepthError  # noqa: E402
from prelens.faithful import init_mlp, make_mlp  # noqa: E402
from prelens.nn import DenseParams, dense, layer_norm, tanh, token_embedding  # noqa: E402
from prelens.tambara import interpret  # noqa: E402


class WB(NamedTuple):
    weight: Any
    bias: Any


def transposing_affine() -> PreLens:
    """A user's affine lens whose bwd returns the weight's delta transposed (a classic slip)."""

    def fwd(p, x):
        return (x, p.weight), x @ p.weight + p.bias

    def bwd(m, da):
        x, w = m
        return WB((x.T @ da).T, da.sum(axis=0)), da @ w.T

    return PreLens(fwd, bwd, "affine", lambda rng: WB(rng.standard_normal((3, 2)), np.zeros(2)))


def test_a_bwd_with_a_misfit_dp_is_named_at_the_first_call_with_the_tree_path():
    l = chain(dense(3, 3), transposing_affine())
    p = l.init(0)
    _, pullback = vjp(l, p, np.ones((4, 3)))
    with pytest.raises(
        StructureError,
        match=r"^affine: bwd returned a dp that does not fit the parameters p of its forward pass: "
        r"at \.weight: expected f64\[3,2\], got f64\[2,3\]",
    ):
        pullback(np.ones((4, 2)))


def test_the_innermost_lens_is_named_and_where_is_added_once():
    bad = PreLens(lambda p, s: (s, s), lambda m, da: ((), da[:1]), name="bad")
    l = (tanh >> (tanh >> bad)) >> tanh
    _, pullback = vjp(l, l.init(0), np.ones(3))
    with pytest.raises(
        StructureError, match=r"^bad: bwd returned a ds .* at <root>: expected f64\[3\], got f64\[1\]"
    ) as info:
        pullback(np.ones(3))
    assert str(info.value).count("\n  in ") == 1
    assert str(info.value).endswith("in tanh >> (tanh >> bad) >> tanh: part 0.1.1 (bad)")


@pytest.mark.parametrize("wrap", [lambda l: batch_n(2, l), lambda l: vec_lens(2, l)], ids=["batch_n", "vec_lens"])
def test_copies_in_batch_n_and_vec_lens_are_checked(wrap):
    bad = PreLens(lambda p, s: (s, s), lambda m, da: ((), [da]), name="listy")
    l = wrap(bad)
    p = () if "batch_n" in repr(l) else [(), ()]
    _, pullback = vjp(l, p, [np.ones(2), np.ones(2)])
    with pytest.raises(
        StructureError,
        match=r"(?s)^listy: bwd returned a ds .*expected f64\[2\], got list of 1.*\n  in .*: part 0 \(listy\)$",
    ):
        pullback([np.ones(2), np.ones(2)])


@pytest.mark.parametrize("wrap", [lambda l: batch_n(2, l), lambda l: vec_lens(2, l)], ids=["batch_n", "vec_lens"])
def test_copies_of_the_wrong_number_are_named(wrap):
    l = wrap(tanh_vec)
    p = () if "batch_n" in repr(l) else [(), ()]
    with pytest.raises(
        StructureError, match=r"\(2, tanh_vec\): input: expected list of 2, got \[f64\[3\], f64\[3\], f64\[3\]\]$"
    ):
        forward(l, p, [V3, V3, V3])


@pytest.mark.parametrize("run", ["vjp", "backward"])
def test_a_lone_lens_is_checked_by_the_trace(run):
    bad = PreLens(lambda p, s: (s, 2 * s), lambda m, da: (np.zeros(2), 2 * da), name="bad")  # p is (), dp is not
    with pytest.raises(
        StructureError, match=r"^bad: bwd returned a dp .* at <root>: expected tuple of 0, got f64\[2\]"
    ):
        if run == "vjp":
            vjp(bad, (), np.ones(3))[1](np.ones(3))
        else:
            backward(bad, (), np.ones(3), np.ones(3))


def test_deltas_that_are_fine_pass():
    # ds None for data, arrays for lists of floats, a named tuple for a plain tuple
    d = dense(3, 2, input_delta=False)
    vjp(d, d.init(0), np.ones((2, 3)))[1](np.ones((2, 2)))
    from prelens.faithful import neuron_l

    n = neuron_l(2)
    vjp(chain(n), [n.init(0)], [0.5, -1.0])[1](1.0)
    ln = layer_norm(2)
    vjp(chain(ln), [tuple(ln.init(0))], np.ones((2, 2)))[1](np.ones((2, 2)))


def test_residues_are_plain_from_the_first_call():
    l = chain(dense(3, 2), tanh)
    m, _ = l.fwd(l.init(0), np.ones((1, 3)))
    assert type(m) is list and len(m) == 2


def test_wrong_dtypes_are_dtype_errors():
    with pytest.raises(DTypeError, match=r"token ids: expected an integer array, got f64\[1,2\]"):
        token_embedding(5, 2).fwd(np.zeros((5, 2)), np.array([[1.0, 2.0]]))
    with pytest.raises(DTypeError, match=r"dense\(3→2, tanh\): input: expected f64\[\.\.\.,3\], got i64\[2,3\]"):
        dense(3, 2).fwd(dense(3, 2).init(0), np.ones((2, 3), dtype=np.int64))
    with pytest.raises(DTypeError, match=r"tanh: input: expected a float array, got i64\[3\]"):
        tanh.fwd((), np.arange(3))
    with pytest.raises(DTypeError, match=r"dense\(3→2, tanh\): output delta: expected f64\[2,2\], got f32\[2,2\]"):
        d = dense(3, 2)
        m, _ = d.fwd(d.init(0), np.ones((2, 3)))
        d.bwd(m, np.ones((2, 2), np.float32))
    assert isinstance(DenseParams(1, 2), tuple)


# ------------------------------------------------------------- recursion depth


def test_a_tri_lens_run_as_nested_closures_raises_one_clear_error():
    mlp = make_mlp(3, [4, 4, 1])
    lens = interpret(batch_n(8, mlp), id_pre_lens)  # the post's route: one closure per dimap
    with pytest.raises(DepthError, match=r"nested too deeply.*run a TriLens with from_tamb") as info:
        vjp(lens, init_mlp(3, [4, 4, 1], np.random.default_rng(0)), [np.ones(3)] * 8)
    assert isinstance(info.value, RecursionError)
    assert "\n  in " not in str(info.value) and str(info.value).count("nested too deeply") == 1
    # the suggested fix works, at the default recursion limit
    out = forward(from_tamb(batch_n(8, mlp)), init_mlp(3, [4, 4, 1], np.random.default_rng(0)), [np.ones(3)] * 8)
    assert len(out) == 8


def test_a_too_deep_composition_is_reported_once_not_at_every_level():
    deep = id_pre_lens
    for _ in range(3000):
        deep = deep >> id_pre_lens
    with pytest.raises(DepthError) as info:
        deep.init(0)
    assert str(info.value).count("nested too deeply") == 1 and len(str(info.value)) < 1000


# ---------------------------------------------------- reruns on a skeleton checked in full

from prelens.core import _trace  # noqa: E402


def _counting_square() -> tuple[PreLens, list[int]]:
    """x -> x * x whose declared output delta is read (counted) by the per-call backward test."""
    from prelens.core import Expects
    from prelens.core._check import Arr, Like

    reads = [0]

    def like_output(m: Any) -> tuple[Any, Any]:
        reads[0] += 1
        return m, m.shape

    expects = Expects(input=Arr(np.float64, ..., 3), delta=Like(like_output))
    square = PreLens(lambda p, s: (s, s * s), lambda m, da: ((), 2 * m * da), name="square", expects=expects)
    return square, reads


def test_a_rerun_on_a_checked_skeleton_skips_the_per_call_tests_and_a_new_skeleton_is_checked():
    square, reads = _counting_square()
    model = square >> square
    x = np.arange(6.0).reshape(2, 3)
    first = backward(model, ((), ()), x, np.ones((2, 3)))
    assert reads[0] >= 2  # both parts tested their output deltas
    assert _trace._CHECKED not in model.__dict__  # a lens run once (model >> loss made per call) makes no test
    backward(model, ((), ()), x, np.ones((2, 3)))  # the first rerun: checked, and its skeleton's test made
    checked = reads[0]
    again = backward(model, ((), ()), 2 * x, np.ones((2, 3)))  # the same skeleton: trusted
    assert reads[0] == checked
    np.testing.assert_array_equal(again[1], 8 * first[1])  # d(x^4)/dx = 4x^3 at 2x
    backward(model, ((), ()), np.ones((4, 3)), np.ones((4, 3)))  # a new batch size: checked in full
    assert reads[0] > checked
    with pytest.raises(ShapeError, match=re.escape("square: input: expected f64[...,3], got f64[4,2]")):
        backward(model, ((), ()), np.ones((4, 2)), np.ones((4, 2)))
    with pytest.raises(DTypeError, match=re.escape("square: output delta: expected f64[2,3], got f32[2,3]")):
        backward(model, ((), ()), x, np.ones((2, 3), np.float32))  # a delta of another dtype: checked


def test_a_lens_run_by_hand_is_checked_on_every_call_even_after_the_trace_trusted_it():
    square, reads = _counting_square()
    x = np.ones((2, 3))
    for _ in range(2):
        vjp(square, (), x)[1](np.ones((2, 3)))
    n = reads[0]
    m, _ = square.fwd((), x)
    square.bwd(m, np.ones((2, 3)))
    assert reads[0] == n + 1
    with pytest.raises(ShapeError, match=re.escape("square: output delta: expected f64[2,3], got f64[3]")):
        square.bwd(m, np.ones(3))


def test_a_lens_whose_skeleton_keeps_changing_stops_making_exact_tests(monkeypatch):
    monkeypatch.setattr(_trace, "_MAKE_AT_MOST", 3)
    square, reads = _counting_square()
    for n in range(1, 7):  # a new batch size every run: each checked in full
        vjp(square, (), np.ones((n, 3)))[1](np.ones((n, 3)))
    assert square.__dict__[_trace._TESTS_MADE] == 3 and len(square.__dict__[_trace._CHECKED]) == 3
    before = reads[0]
    vjp(square, (), np.ones((6, 3)))[1](np.ones((6, 3)))  # never made a test: still checked
    vjp(square, (), np.ones((2, 3)))[1](np.ones((2, 3)))  # made one: trusted
    assert reads[0] == before + 1


def test_a_loop_of_value_and_grad_reruns_one_lens_and_makes_its_exact_test_once(monkeypatch):
    from prelens.nn import linear, mse
    from prelens.train import value_and_grad

    made, real = [], _trace.exact_test
    monkeypatch.setattr(_trace, "exact_test", lambda *v: made.append(v) or real(*v))
    model, batch = linear(2, 1), (np.ones((4, 2)), np.zeros((4, 1)))
    params = model.init(0)
    values = [value_and_grad(model, mse, params, batch)[0] for _ in range(5)]
    assert len(made) == 2 and len(set(values)) == 1  # the (p, s) and the da of the first rerun; then trusted


def test_a_model_nested_deeper_than_python_parses_reruns_checked_without_an_exact_test():
    from prelens.nn import linear

    model = functools.reduce(operator.rshift, [linear(2, 2) for _ in range(250)])  # parameters 250 deep
    params, x = model.init(0), np.ones((1, 2))
    for _ in range(3):
        _, pullback = vjp(model, params, x)
        pullback(np.ones((1, 2)))
    assert model.__dict__.get(_trace._CHECKED, ()) == ()


def test_a_trusted_rerun_that_fails_on_its_values_is_diagnosed_as_a_checked_run_is():
    from prelens.nn import linear

    def picky_bwd(m: Any, da: Any) -> Any:
        if (da < 0).any():
            raise ValueError("negative delta")
        return (), da

    def build() -> PreLens:
        picky = PreLens(lambda p, s: ((), s), picky_bwd, name="picky")
        return token_embedding(5, 3) >> linear(3, 2) >> picky

    model = build()
    params, ids = model.init(0), np.array([[0, 1], [2, 3]])
    for _ in range(3):  # checked, checked (the exact test made), trusted
        vjp(model, params, ids)[1](np.ones((2, 2, 2)))

    def message(lens: PreLens, ids: Any, da: Any) -> str:
        with pytest.raises(Exception) as info:
            vjp(lens, params, ids)[1](da)
        return str(info.value)

    bad_ids, bad_delta = np.array([[0, 1], [2, 7]]), -np.ones((2, 2, 2))
    for where, bad in (
        ("part 0.0 (token_embedding", (bad_ids, np.ones((2, 2, 2)))),
        ("part 1 (picky)", (ids, bad_delta)),
    ):
        trusted, fresh = message(model, *bad), message(build(), *bad)
        assert trusted == fresh and where in fresh


def test_a_trusted_rerun_runs_the_parts_of_chains_products_and_named_composites_without_their_guards():
    import sys

    from prelens.core import tree_allclose
    from prelens.nn import mlp, mse

    callers: list[str] = []

    def fwd(p: Any, s: Any) -> Any:
        callers.append(sys._getframe(1).f_code.co_name)
        return (), s

    probe = PreLens(fwd, lambda m, da: ((), da), name="probe")
    model = (chain(probe, mlp(3, [4, 2])) @ probe).named("pair") >> (probe @ id_pre_lens)
    p, x, da = model.init(0), (np.ones((5, 3)), np.ones(2)), (np.ones((5, 2)), np.ones(2))
    runs = [vjp(model, p, x)[1](da) for _ in range(3)]  # checked, checked (its exact test made), trusted
    assert callers[:6] == ["checked_fwd"] * 6 and callers[6:] == ["fwd"] * 3  # called by chain, @ and >>
    assert tree_allclose(runs[0], runs[2], rtol=0)
    net = mlp(3, [4, 2])
    trained, params = net >> mse, (np.zeros((5, 2)), net.init(0))
    grads = [vjp(trained, params, np.ones((5, 3)))[1](1.0) for _ in range(3)]
    assert tree_allclose(grads[0], grads[2], rtol=0) and _trace._UNGUARDED in trained.__dict__


def test_a_lens_is_not_an_array_operand_and_declares_with_an_expects():
    """``x @ lens`` (matmul meant, or application) is Python's TypeError naming both operands, not numpy's
    complaint about a 0-d operand; a declaration that is not an ``Expects`` is refused where the lens is built."""
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @: 'numpy.ndarray' and 'PreLens'"):
        np.ones(3) @ tanh_vec
    with pytest.raises(StructureError, match=r"^PreLens: expects must be an Expects\(\.\.\.\), got int 3$"):
        PreLens(lambda p, s: ((), s), lambda m, da: ((), da), expects=3)


def test_the_sums_of_branch_copy_l_add_l_and_batch_n_name_the_lens_not_tree_sum():
    from prelens import add_l, batch_n, branch, copy_l

    with pytest.raises(
        StructureError, match=r"^branch\(2\): delta 1 does not have the structure and shapes of delta 0"
    ):
        branch(2).bwd((), [np.ones(2), np.ones((3, 2))])
    with pytest.raises(StructureError, match=r"^copy_l: delta 1 does not have the structure and shapes of delta 0"):
        copy_l.bwd((), (np.ones(2), np.ones(3)))
    with pytest.raises(StructureError, match=r"^add_l: input 1 does not have the structure and shapes of input 0"):
        add_l.fwd((), (np.ones(2), np.ones((3, 2))))
    from prelens import from_tamb
    from prelens.faithful import branch_t

    with pytest.raises(StructureError, match=r"^branch_t\(2\): delta 1 does not have the structure and shapes"):
        from_tamb(branch_t(2)).bwd((), [np.ones(2), np.ones((3, 2))])
    shared = batch_n(2, PreLens(lambda p, s: ((), s), lambda m, da: (da, da), name="pass"))
    with pytest.raises(StructureError, match=r"^batch_n\(2, pass\): parameter delta 1 does not have the structure"):
        shared.bwd([(), ()], [np.ones(2), np.ones(3)])


def test_a_diagnosed_failure_keeps_the_exception_it_diagnosed_as_its_cause_through_composites_and_the_trace():
    def fwd(p, s):
        raise ValueError("the user's own line")

    def bwd(m, da):
        raise KeyError("the user's own key")

    own = PreLens(fwd, bwd, name="own")
    model = id_pre_lens >> own
    for run in (
        lambda: own.fwd((), V3),
        lambda: model.fwd(((), ()), V3),
        lambda: forward(own, (), V3),
        lambda: forward(model, ((), ()), V3),
        lambda: own.bwd((), V3),
        lambda: vjp(PreLens(lambda p, s: ((), s), bwd, name="own"), (), V3)[1](V3),
    ):
        with pytest.raises(StructureError, match=r"^own: the (forward|backward) pass failed") as info:
            run()
        assert type(info.value.__cause__) in (ValueError, KeyError), repr(info.value.__cause__)  # the user's own


def test_the_sum_of_scan_t_s_parameter_deltas_names_scan_t():
    from prelens import from_tamb, to_tamb
    from prelens.tambara import scan_t

    def bwd(m, d):  # a parameter delta of the step's shape: steps of two lengths do not add up
        return np.ones(len(d[1])), (d[0], d[1])

    cell = PreLens(lambda p, hx: ((), (hx[0], hx[1])), bwd, name="cell")
    lens = from_tamb(scan_t(to_tamb(cell), n=2))
    m, _ = lens.fwd((), (0.0, [np.ones(2), np.ones(3)]))
    with pytest.raises(StructureError, match=r"^scan_t\(to_tamb\(cell\), n=2\): parameter delta 1 does not have"):
        lens.bwd(m, (0.0, [np.ones(2), np.ones(3)]))
