"""What the checks of notebook 08_learning_as_optics tell a student, beyond right and wrong."""

import importlib
import sys
from pathlib import Path

from prelens import PreLens
from prelens.learn import OptimizerLens

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
if str(NOTEBOOKS) not in sys.path:
    sys.path.insert(0, str(NOTEBOOKS))

check = importlib.import_module("exercises.ex08_learning_as_optics")
solution = importlib.import_module("solutions.ex08_learning_as_optics")


def test_a_rate_with_the_wrong_sign_is_told_it_climbs(capsys):
    assert check.my_rate(solution.MISTAKES["my_rate"]) is False
    assert "should make the loss's delta −α = -0.5, got 0.5: with +α every step climbs" in capsys.readouterr().out


def test_a_rate_that_changes_the_loss_is_told_to_hand_it_on(capsys):
    doubled = PreLens(lambda p, loss: ((), 2 * loss), lambda m, da: ((), -0.5))
    assert check.my_rate(lambda alpha: doubled) is False
    assert "the forward pass should hand the loss on unchanged: 2.5 came out as 5.0" in capsys.readouterr().out


def test_an_uphill_optimiser_is_told_that_g_is_minus_the_delta(capsys):
    assert check.sign_descent(solution.MISTAKES["sign_descent"]) is False
    assert "the delta p' that reaches put is −α·∇L, so g = −p'" in capsys.readouterr().out


def test_plain_gradient_descent_is_not_sign_descent(capsys):
    def plain(lr):
        def bwd(m, d):
            return (), (m[0] + lr * d, m[1])

        return OptimizerLens(lambda u, ps: (ps, ps[0]), bwd, "gd", init_state=lambda p: ())

    assert check.sign_descent(plain) is False
    assert "should move each weight by ±0.1 against its gradient" in capsys.readouterr().out


def test_a_callback_reading_the_wrong_key_is_told_the_right_one(capsys):
    assert check.stop_when_accurate(solution.MISTAKES["stop_when_accurate"]) is False
    assert "the accuracy on the validation data is recorded as 'val_accuracy'" in capsys.readouterr().out


def test_a_callback_stopping_late_is_told_when_it_should_have(capsys):
    class Late(solution.StopWhenAccurate):
        def on_epoch_end(self, epoch, history, params, opt_state):
            return history.metrics["val_accuracy"][-1] >= self.threshold + 0.04  # late

    assert check.stop_when_accurate(Late) is False
    assert "training should stop after epoch" in capsys.readouterr().out
