"""summary(): the stages of a lens, their shapes and parameter counts (the diagram: test_diagram.py)."""

import re

import numpy as np
import pytest

from prelens import StructureError, add_l, chain, copy_l, summary
from prelens.core import tree_leaves
from prelens.errors import ArgumentError
from prelens.faithful import make_mlp
from prelens.nn import decoder_lm
from prelens.testing._strategies import bias_vec, linear_vec, tanh_vec

NET = linear_vec(3, 4) >> bias_vec(4) >> copy_l >> (tanh_vec @ (linear_vec(4, 4) >> tanh_vec)) >> add_l


def test_summary_walks_the_composition_tree():
    s = summary(NET, (3,))
    names = [(st.depth, st.name) for st in s.stages]
    assert names[0][0] == 0 and names[0][1] == repr(NET)
    assert (1, "copy_l") in names and (2, "tanh_vec") in names and (3, "linear_vec(4→4)") in names
    assert s.total_params == 12 + 4 + 16


def test_summary_shows_shapes_and_counts():
    text = str(summary(chain(linear_vec(3, 2), tanh_vec), (3,)))
    assert "linear_vec(3→2)  f64[2]  f64[2,3]" in text
    assert "total parameters: 6" in text


def test_summary_of_a_parallel_input_tree():
    s = summary(tanh_vec @ linear_vec(2, 5), ((3,), (2,)))
    assert s.stages[0].output == "(f64[3], f64[5])"


def test_summary_uses_given_parameters_and_dtype():
    l = linear_vec(2, 2)
    s = summary(l, (2,), params=np.eye(2, dtype=np.float32), dtype=np.float32)
    assert s.stages[0].output == "f32[2]"


def test_summary_of_a_float32_model_is_shown_float32_data():
    """Without ``dtype`` the example takes the parameters' float dtype (it was float64: a DTypeError)."""
    from prelens.nn import mlp

    s = summary(mlp(4, [8, 3], dtype=np.float32), (5, 4))
    assert s.input == "f32[5,4]" and s.stages[0].output == "f32[5,3]"
    assert summary(tanh_vec, (3,)).input == "f64[3]"  # no parameters: float64, as before


def test_a_shape_of_numpy_ints_is_a_shape():
    """``(np.int64(3),)`` (a size computed with numpy) was taken as an example value: the lens got a tuple."""
    assert summary(linear_vec(3, 2), (np.int64(3),)).input == "f64[3]"
    with pytest.raises(
        ArgumentError, match=r"summary: every size in input_shape must be an int >= 0, got np.int64\(-1\)"
    ):
        summary(linear_vec(3, 2), (np.int64(-1),))


LM = decoder_lm(16, 8, 2, 16, 2, 6)
TOKENS = np.zeros((2, 6), dtype=np.int64)


def test_named_models_are_opened_up_into_their_composition():
    s = summary(LM, TOKENS)
    rows = [(st.depth, st.name) for st in s.stages]
    assert rows[:3] == [(0, repr(LM)), (1, "token_embedding(16, 8)"), (1, "positional_embedding(6, 8)")]
    assert (4, "multi_head_attention(8, heads=2, causal)") in rows and (5, "linear(8→8)") in rows
    assert (5, "projections(8, heads=2)") in rows and (5, "scaled_dot_product_attention(d_k=4, causal)") in rows
    leaves = [st for st in s.stages if not st.op]
    assert s.total_params == sum(st.count for st in leaves) == sum(x.size for x in tree_leaves(LM.init(0)))
    text = str(s)
    assert re.search(r"\n  encoder_block\(8, heads=2, d_ff=16, causal\) +f64\[2,6,8\] +568\n", text)
    assert "LayerNormParams(gain=f64[8], bias=f64[8])" in text


def test_depth_folds_deeper_composites_into_one_stage():
    s = summary(LM, TOKENS, depth=2)
    assert max(st.depth for st in s.stages) == 2
    attention = next(st for st in s.stages if st.name.startswith("residual(multi_head"))
    assert (attention.op, attention.count) == ("", 4 * 64)
    assert attention.params == "AttentionParams(W_Q=f64[8,8], W_K=f64[8,8], W_V=f64[8,8], W_O=f64[8,8])"
    assert summary(LM, TOKENS, depth=0).stages[0].params.startswith("LMParams(")


def test_a_trilens_or_a_bad_depth_is_refused_with_a_hint():
    with pytest.raises(StructureError, match=r"summary: lens must be a PreLens \(a TriLens becomes one with from_tamb"):
        summary(make_mlp(3, [4, 1]), (3,))
    with pytest.raises(ArgumentError, match=r"summary: depth must be an int >= 0, got -1"):
        summary(NET, (3,), depth=-1)


def test_summary_shows_convolution_and_pooling():
    from prelens.nn import composed, conv1d, dense, flatten, max_pool, relu

    cnn = chain(conv1d(1, 25, 5, stride=2, padding=1), relu, max_pool(2), flatten(), dense(225, 10, None))
    s = summary(cnn, np.zeros((100, 40, 1)))
    rows = {st.name: st for st in s.stages}
    assert rows["conv1d(1→25, kernel=5, stride=2, padding=1)"].output == "f64[100,19,25]"
    assert rows["conv1d(1→25, kernel=5, stride=2, padding=1)"].count == 5 * 25 + 25
    assert rows["max_pool(kernel=2)"].output == "f64[100,9,25]" and rows["flatten"].output == "f64[100,225]"
    assert s.total_params == 150 + 2250 + 10
    assert "ConvParams(weight=f64[5,1,25], bias=f64[25])" in str(s)
    twin = summary(composed.conv1d(4, 6, 3, groups=2), np.zeros((2, 9, 4)))
    names = [st.name for st in twin.stages]
    assert names[1:] == [
        "patches(kernel=3)",
        "split_groups(2)",
        "vec_lens(2, linear(6→3))",
        "join_groups(2)",
        "bias(6)",
    ]
    assert twin.total_params == 3 * 2 * 6 + 6


def test_summary_of_recurrent_layers():
    from prelens import scan
    from prelens.nn import bidirectional, gru, linear
    from prelens.nn.composed import gru_cell

    s = summary(bidirectional(gru(1, 6)) >> linear(12, 2), (100, 40, 1))
    assert s.stages[0].output == "f64[100,40,2]" and s.total_params == 2 * (18 + 108 + 36) + 24
    assert "bidirectional(gru(1→6))" in str(s)
    s = summary(scan(gru_cell(1, 6), axis=1), ((100, 6), (100, 40, 1)))
    assert s.stages[0].output == "(f64[100,6], f64[100,40,6])" and s.total_params == 162


def test_summary_shows_the_types_of_scalars_never_their_values():
    from prelens import from_tamb
    from prelens.faithful import Para, neuron_t

    s = summary(from_tamb(neuron_t(3)), np.array([0.5, -1.0, 2.0]), params=Para(0.25, np.ones(3)))
    assert s.input == "f64[3]"
    assert s.stages[0].output == "float" and s.stages[0].params == "Para(bias=float, weight=f64[3])"
    assert "0.25" not in str(s) and "0.9" not in str(s)
