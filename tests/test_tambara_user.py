"""What a researcher who works in the Tambara encoding met (sixth wave): each defect, pinned."""

import re
from pathlib import Path

import numpy as np
import pytest

from prelens import PreLens, from_tamb, to_tamb
from prelens.tambara import Cost, Program, Rule, placeholder, register_rule

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_register_rule_returns_the_lens_as_documented():
    # docs/api.md: "register_rule(lens, rule) — give a lens its Rule; returns the lens". It returned None.
    double = register_rule(
        PreLens(lambda p, s: ((), 2 * s), lambda dm, da: ((), 2 * da), name="double"),
        Rule(lambda p, s: ((), s), lambda dm, da: ((), da), lambda p, s: (3, 3)),
    )
    assert isinstance(double, PreLens)
    assert Cost.of(to_tamb(double), (), placeholder((3,))).total == (3, 3)


def test_the_methods_docs_list_for_program_exist():
    # docs/api.md listed Program's `pre_lens()`, removed in 0.4 (CHANGELOG: "use from_tamb").
    entry = re.search(r"^- `Program\(\)` — (.*?)(?=^- )", API.read_text(), re.S | re.M)
    assert entry
    for name in re.findall(r"`(\w+)\(\)`", entry.group(1)):
        assert hasattr(Program, name), name


def test_scan_t_by_the_cons_recursion_records_a_program_linear_in_its_length():
    # Its cells ran through PLeft/PRight wrapping the Program: ~2n² steps, each map wrapped n deep
    # (n = 100 took 33 s to build, n = 200 over 3 minutes). It now focuses, as tri_tensor does.
    from prelens.tambara import interpret, scan_t

    add = PreLens(lambda p, hx: ((), (hx[0] + hx[1],) * 2), lambda m, d: ((), (d[0] + d[1],) * 2), name="add")
    steps = [len(interpret(scan_t(to_tamb(add), n=n), Program())) for n in (10, 20, 30)]
    assert steps[2] - steps[1] == steps[1] - steps[0], steps
    lens = from_tamb(scan_t(to_tamb(add), n=150))
    assert lens.fwd((), (0.0, [1.0] * 150))[1][0] == 150.0


def test_the_faithful_neuron_takes_a_0d_array_where_it_takes_a_float():
    # loss_l took a 0-d array as its delta; activ_l, bias_l and linear_l refused one ("must be a real number").
    from prelens import backward
    from prelens.faithful import Para, activ_l, bias_l, neuron_t

    p, x = Para(0.1, np.array([0.5, -0.2, 0.3])), np.array([1.0, 2.0, -1.0])
    want = backward(neuron_t(3), p, x, 1.0)
    got = backward(neuron_t(3), p, x, np.array(1.0))
    assert got[0].bias == want[0].bias and np.array_equal(got[1], want[1])
    assert activ_l.fwd((), np.array(0.5))[1] == activ_l.fwd((), 0.5)[1]
    assert bias_l.fwd(np.array(0.5), np.array(1.0)) == ((), 1.5)


def test_placeholder_takes_a_shape_as_numpy_does():
    # np.zeros(4) and np.zeros([2, 3]) work; placeholder(4) and placeholder([2, 3]) were "must be a tuple".
    assert placeholder(4).shape == (4,)
    assert placeholder(np.int64(4)).shape == (4,)
    assert placeholder([2, 3], np.float32).shape == (2, 3)
    assert placeholder([2, 3], np.float32).dtype == np.float32


def _double():
    return PreLens(lambda p, s: ((), 2 * s), lambda dm, da: ((), 2 * da), name="double")


@pytest.mark.parametrize(
    ("rule", "match"),
    [
        (
            Rule(lambda p, s: ((), s), lambda dm, da: ((), da), lambda p, s: 3),
            r"double's Rule: what madds returns must be a pair of ints",
        ),
        (
            Rule(lambda p, s: ((), s), lambda dm, da: ((), da), lambda p, s: (1, "2")),
            r"double's Rule: what madds returns must be",
        ),
        (
            Rule(lambda p, s: s, lambda dm, da: ((), da), lambda p, s: (1, 1)),
            r"double's Rule: what forward returns must be a pair \(m, a\)",
        ),
        (
            Rule(lambda p, s: ((), s), lambda dm, da: da, lambda p, s: (1, 1)),
            r"double's Rule: what backward returns must be a pair \(dp, ds\)",
        ),
    ],
)
def test_a_rule_that_returns_the_wrong_structure_is_named(rule, match):
    # A madds of 3, not (3, 3), was "TypeError: 'int' object is not subscriptable"; a forward rule returning the
    # output alone "ValueError: too many values to unpack": nothing named the lens or its rule.
    from prelens.errors import PrelensError

    with pytest.raises(PrelensError, match=match):
        Cost.of(to_tamb(register_rule(_double(), rule)), (), placeholder(3))
