"""What the checks of notebook 07_many_meanings tell a student, beyond right and wrong.

``tests/test_exercises.py`` runs every notebook's checks on their solutions, mistakes and
placeholders; here, the answers that are wrong in a way a student will meet get the hint that
fixes them.
"""

import importlib
import sys
from pathlib import Path

import numpy as np

from prelens import from_tamb
from prelens.tambara import Rule

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
if str(NOTEBOOKS) not in sys.path:
    sys.path.insert(0, str(NOTEBOOKS))

check = importlib.import_module("exercises.ex07_many_meanings")
solution = importlib.import_module("solutions.ex07_many_meanings")


def test_a_rule_making_the_wrong_shapes_is_told_which(capsys):
    flat = Rule(lambda p, s: (s, s), lambda dm, da: (0.0, da), solution.scale_rule.madds)  # residue: s alone
    assert check.scale_rule(flat) is False
    assert "the residue should read (f64, f64[3]), got f64[3]" in capsys.readouterr().out
    boxed = Rule(solution.scale_rule.forward, lambda dm, da: (np.zeros(1), da), solution.scale_rule.madds)
    assert check.scale_rule(boxed) is False
    assert "the parameter delta should read f64, got f64[1]" in capsys.readouterr().out


def test_a_rule_counting_one_backward_delta_is_told_there_are_two(capsys):
    assert check.scale_rule(solution.MISTAKES["scale_rule"]) is False
    assert "(forward, backward) = (3, 6), got (3, 3)" in capsys.readouterr().out


def test_a_forgotten_residue_is_told_what_each_neuron_keeps(capsys):
    assert check.residue_bytes(solution.MISTAKES["residue_bytes"]) is False
    out = capsys.readouterr().out
    assert "residue_bytes(3, [4, 4, 1]) should be 584, got 512" in out and "activ_l" in out


def test_fromtamb_by_hand_must_not_be_from_tamb(capsys):
    assert check.closure_from_tamb(from_tamb) is False
    assert "run the TriLens on id_pre_lens yourself" in capsys.readouterr().out


def test_units_left_in_are_named(capsys):
    assert check.closure_from_tamb(solution.MISTAKES["closure_from_tamb"]) is False
    assert "strip the units" in capsys.readouterr().out
