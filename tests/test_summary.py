"""summary() and the string diagram."""

import matplotlib
import numpy as np

from prelens import add_l, chain, copy_l, summary
from prelens.diagram import draw
from prelens.testing import bias_vec, linear_vec, tanh_vec

matplotlib.use("Agg")

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


def test_diagram_draws_a_box_per_stage_and_wires_for_params_and_residues():
    ax = draw(NET, (3,))
    assert len(ax.patches) == 7
    texts = {t.get_text() for t in ax.texts}
    assert {"copy_l", "add_l", "linear_vec(4→4)"} <= texts
    assert "f64[4,3]" in texts  # the parameter wire of the first linear map is labelled
