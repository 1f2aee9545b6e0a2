"""The string diagram: both passes, residues turning back, types on the wires, labels inside their boxes."""

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from prelens import PreLens, StructureError, add_l, copy_l
from prelens.errors import ArgumentError
from prelens.nn import decoder_lm, mlp
from prelens.nn.composed import attention_head
from prelens.show._diagram import draw
from prelens.show._summary import type_of
from prelens.testing._strategies import bias_vec, linear_vec, tanh_vec

matplotlib.use("Agg")

NET = linear_vec(3, 4) >> bias_vec(4) >> copy_l >> (tanh_vec @ (linear_vec(4, 4) >> tanh_vec)) >> add_l
#: Its stages in drawing order, and which of them have parameters and residues.
STAGES = ["linear_vec(3→4)", "bias_vec(4)", "copy_l", "tanh_vec", "linear_vec(4→4)", "tanh_vec", "add_l"]
WITH_PARAMS = {0, 1, 4}
WITH_RESIDUE = {0, 3, 4, 5}  # bias_vec, copy_l and add_l keep nothing for the backward pass


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def by_gid(ax, pattern):
    """Artists (patches, lines, texts) whose gid matches ``pattern``, by the number in their gid."""
    found = {}
    for artist in [*ax.patches, *ax.lines, *ax.texts]:
        m = re.fullmatch(pattern, artist.get_gid() or "")
        if m:
            found[int(m.group(1))] = artist
    return found


def extent(artist, ax):
    return artist.get_window_extent(ax.figure.canvas.get_renderer())


def test_both_passes_have_a_box_per_stage_with_the_same_name():
    ax = draw(NET, (3,))
    fwd, bwd = by_gid(ax, r"fwd-box-(\d+)"), by_gid(ax, r"bwd-box-(\d+)")
    assert sorted(fwd) == sorted(bwd) == list(range(len(STAGES)))
    names = {k: t.get_text().replace("\n", "") for k, t in by_gid(ax, r"fwd-label-(\d+)").items()}
    assert [names[k] for k in range(len(STAGES))] == STAGES
    assert {k: t.get_text() for k, t in by_gid(ax, r"bwd-label-(\d+)").items()} == {
        k: t.get_text() for k, t in by_gid(ax, r"fwd-label-(\d+)").items()
    }
    for k in fwd:  # the backward pass is the forward one mirrored: same column, below it
        f, b = fwd[k].get_bbox(), bwd[k].get_bbox()
        assert f.x0 == pytest.approx(b.x0) and b.y1 < f.y0


def test_each_residue_turns_back_from_its_forward_box_into_its_backward_box():
    ax = draw(NET, (3,))
    fwd, bwd, wires = by_gid(ax, r"fwd-box-(\d+)"), by_gid(ax, r"bwd-box-(\d+)"), by_gid(ax, r"residue-(\d+)")
    assert set(wires) == WITH_RESIDUE
    for k, wire in wires.items():
        verts = wire.get_path().vertices
        (x0, y0), (x1, y1) = verts[0], verts[-1]
        f, b = fwd[k].get_bbox(), bwd[k].get_bbox()
        assert x0 == pytest.approx(f.x1) and f.y0 < y0 < f.y1, "leaves its forward box on the right"
        assert x1 == pytest.approx(b.x1) and b.y0 < y1 < b.y1, "enters its backward box on the right"
        assert verts[:, 0].max() > f.x1, "and turns back in the gap beside the box"


def test_parameters_enter_the_forward_box_and_their_deltas_leave_the_backward_box():
    ax = draw(NET, (3,))
    fwd, bwd = by_gid(ax, r"fwd-box-(\d+)"), by_gid(ax, r"bwd-box-(\d+)")
    p_wires, dp_wires = by_gid(ax, r"p-wire-(\d+)"), by_gid(ax, r"dp-wire-(\d+)")
    assert set(p_wires) == set(dp_wires) == WITH_PARAMS
    for k in WITH_PARAMS:
        assert min(p_wires[k].get_ydata()) == pytest.approx(fwd[k].get_bbox().y1)  # ends on the top edge
        assert max(dp_wires[k].get_ydata()) == pytest.approx(bwd[k].get_bbox().y0)  # starts at the bottom edge
    texts = {t.get_text() for t in ax.texts}
    assert {"p: f64[4,3]", "dp: f64[4,3]", "p: f64[4]", "dp: f64[4]"} <= texts
    assert {"s: f64[3]", "ds: f64[3]", "a: f64[4]", "da: f64[4]"} <= texts


def test_labels_show_types_never_values():
    bias = PreLens(lambda b, s: ((), s + b), lambda m, da: (da, da), name="bias", init_fn=lambda rng: 0.25)
    scale = PreLens(lambda c, s: ((c, s), c * s), lambda m, da: (da * m[1], da * m[0]), "scale", lambda rng: 2.0)
    ax = draw(bias >> scale, (2,))
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "p: float" in texts and "dp: float" in texts and "m: (float, f64[2])" in texts
    assert not re.search(r"\d\.\d", texts), texts  # no value such as 0.25 or 2.0 anywhere


def test_type_of_describes_structure_without_values():
    from prelens.faithful import Para

    assert type_of(Para(0.5, np.zeros(3))) == "Para(bias=float, weight=f64[3])"
    assert type_of([np.float32(1)] * 4) == "[f32 × 4]"
    assert type_of(((), (1, None))) == "((), (int, None))"
    assert type_of({k: 1.0 for k in "abcd"}) == "{a: float, b: float, c: float, …}"  # cut short, as a list is


def label_overflows(ax):
    """``(label, box)`` pairs where a box's label is not inside the box, in display coordinates."""
    ax.figure.canvas.draw()
    bad = []
    assert by_gid(ax, r"fwd-box-(\d+)")
    for half in ("fwd", "bwd"):
        boxes, labels = by_gid(ax, half + r"-box-(\d+)"), by_gid(ax, half + r"-label-(\d+)")
        assert sorted(boxes) == sorted(labels)
        for k, box in boxes.items():
            outer, inner = extent(box, ax), extent(labels[k], ax)
            if not (outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1):
                bad.append((labels[k].get_text(), box.get_gid()))
    return bad


LONG = PreLens(lambda p, s: ((), s), lambda m, da: ((), da), name="a_lens_with_a_name_far_too_long_for_any_box" * 3)


@pytest.mark.parametrize(
    ("lens", "shape", "kw"),
    [
        (NET, (3,), {}),
        (attention_head(8, 4, causal=True), (1, 4, 8), {}),  # attention_scores(d_k=4) used to overflow
        (decoder_lm(16, 8, 2, 16, 1, 6), np.zeros((2, 6), dtype=np.int64), {"depth": 3}),
        (LONG >> LONG, (2,), {}),
        (mlp(4, [8, 3]), (5, 4), {"backward": False}),
    ],
    ids=["net", "attention_head", "decoder_lm", "long_names", "forward_only"],
)
def test_no_box_label_overflows_its_box(lens, shape, kw):
    assert label_overflows(draw(lens, shape, **kw)) == []


def test_no_box_label_overflows_in_an_axes_of_the_users_size():
    _, ax = plt.subplots(figsize=(14, 4))  # wide and low: the drawing is scaled down to fit
    draw(attention_head(8, 4, causal=True), (1, 4, 8), ax=ax)
    assert label_overflows(ax) == []
    small = [t.get_fontsize() for t in ax.texts if (t.get_gid() or "").startswith("fwd-label")]
    assert max(small) < 8, "the labels shrank with the drawing"


def test_forward_only_keeps_the_old_picture():
    ax = draw(NET, (3,), backward=False)
    assert len(by_gid(ax, r"fwd-box-(\d+)")) == len(STAGES) and not by_gid(ax, r"bwd-box-(\d+)")
    assert not by_gid(ax, r"dp-wire-(\d+)") and set(by_gid(ax, r"residue-(\d+)")) == WITH_RESIDUE
    assert not any(t.get_text().startswith(("dp:", "ds:", "da:")) for t in ax.texts)


def test_parallel_parts_meet_part_by_part():
    """Three projections (q, k), v feed (scores @ id): q and k meet at the scores, v goes on alone."""
    ax = draw(attention_head(8, 4, causal=True), (1, 4, 8), backward=False)
    boxes = by_gid(ax, r"fwd-box-(\d+)")
    names = {k: t.get_text().replace("\n", "") for k, t in by_gid(ax, r"fwd-label-(\d+)").items()}
    [scores] = [k for k, n in names.items() if n.startswith("attention_")]
    left_edge = boxes[scores].get_bbox().x0
    ends = [(line.get_xdata()[-1], line.get_ydata()[-1]) for line in ax.lines if len(line.get_xdata()) == 4]
    into_scores = [e for e in ends if e[0] == pytest.approx(left_edge) and abs(e[1] - boxes[scores].get_bbox().y0) < 1]
    assert len(into_scores) == 2  # from the q and k projections, not from v


def test_draw_uses_a_given_axes_and_refuses_bad_arguments():
    _, ax = plt.subplots()
    assert draw(linear_vec(2, 2), (2,), ax=ax) is ax
    with pytest.raises(ArgumentError, match=r"draw: depth must be an int >= 0, got -1"):
        draw(NET, (3,), depth=-1)
    with pytest.raises(ArgumentError, match=r"draw: backward must be True or False, got 'no'"):
        draw(NET, (3,), backward="no")
    with pytest.raises(ArgumentError, match=r"draw: ax must be a matplotlib Axes or None, got 'left'"):
        draw(NET, (3,), ax="left")
    with pytest.raises(StructureError, match=r"draw: lens must be a PreLens"):
        draw(lambda t: t, (3,))


def test_a_model_opens_up_to_the_depth_asked():
    assert len(by_gid(draw(mlp(4, [8, 3]), (5, 4)), r"fwd-box-(\d+)")) == 2
    assert len(by_gid(draw(decoder_lm(16, 8, 2, 16, 2, 6), np.zeros((2, 6), np.int64), depth=1), r"fwd-box-(\d+)")) == 5
    assert len(by_gid(draw(NET, (3,), depth=0), r"bwd-box-(\d+)")) == 1


def test_wires_between_stages_carry_their_types():
    ax = draw(linear_vec(3, 4) >> bias_vec(4) >> tanh_vec, (3,))
    types = [t.get_text() for t in ax.texts if t.get_gid() == "wire-type"]
    assert types == ["f64[4]"] * 4  # two inner wires, each in both passes
    narrow = draw(linear_vec(3, 4) >> bias_vec(4) >> tanh_vec, (3,), wire_types=False)
    assert not any(t.get_gid() == "wire-type" for t in narrow.texts)


def test_deltas_are_typed_by_the_backward_pass_when_da_is_given():
    """A lens whose output delta is ``()`` (as the learning-rate lens's): labelled ``()``, not the output's type."""
    ignore = PreLens(lambda p, s: ((), float(s.sum())), lambda m, da: ((), np.ones(3)), name="ignore_da")
    lens = tanh_vec >> ignore
    assert "da: float" in {t.get_text() for t in draw(lens, (3,)).texts}
    texts = {t.get_text() for t in draw(lens, (3,), da=(), names={"ds": "new s"}).texts}
    assert {"da: ()", "new s: f64[3]"} <= texts
    with pytest.raises(ArgumentError, match=r"draw: names must be a dict"):
        draw(lens, (3,), names=["s"])


def test_names_of_the_wrong_kind_are_named_errors():
    """A name that is neither a string nor one per wire was a bare TypeError or IndexError; an unknown key was
    ignored."""
    pair = linear_vec(3, 2) @ tanh_vec
    with pytest.raises(ArgumentError, match=r"^draw: names\['s'\] must be a string or a list of 2 names"):
        draw(pair, ((3,), (2,)), names={"s": ["x"]})
    with pytest.raises(ArgumentError, match=r"^draw: names\['a'\] must be a string or a list of 2 names"):
        draw(pair, ((3,), (2,)), names={"a": 3})
    with pytest.raises(ArgumentError, match=r"^draw: names must be a dict from 's', 'ds', 'a', 'da' to names"):
        draw(pair, ((3,), (2,)), names={"x": "input"})
    texts = {t.get_text() for t in draw(pair, ((3,), (2,)), names={"s": ("u", "v"), "da": "back"}).texts}
    assert {"u: f64[3]", "v: f64[2]", "back: f64[2]"} <= texts
    plt.close("all")
