"""``prelens train transformer``: a few steps of each task (tiny sizes; the real runs are in the docs)."""

import pytest

from prelens.checkpoint import load
from prelens.cli import main
from prelens.nn import LMParams

TINY = ["--d-model", "8", "--heads", "2", "--d-ff", "16", "--layers", "1", "--epochs", "1", "--no-progress"]


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_sequence_tasks_train_and_report(task, capsys, tmp_path):
    path = tmp_path / "lm.npz"
    code = main(
        [
            "train",
            "transformer",
            "--task",
            task,
            "--length",
            "3",
            "--train-size",
            "64",
            "--test-size",
            "16",
            "--save",
            str(path),
            *TINY,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "held-out token accuracy" in out and "greedy generation" in out and "trained 1 step in" in out
    params = load(path)
    assert isinstance(params, LMParams) and params.embedding.shape == (12, 8)


def test_text_task_trains_and_samples(capsys):
    code = main(
        [
            "train",
            "transformer",
            "--task",
            "text",
            "--block",
            "8",
            "--train-size",
            "32",
            "--test-size",
            "4",
            "--sample",
            "20",
            "--prompt",
            "When",
            "--float32",
            *TINY,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "held-out loss:" in out and "sample (temperature 0.5):\nWhen" in out


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["train", "transformer", "--help"])
    out = capsys.readouterr().out
    for flag in [
        "--task",
        "--length",
        "--symbols",
        "--text",
        "--block",
        "--train-size",
        "--test-size",
        "--d-model",
        "--heads",
        "--d-ff",
        "--layers",
        "--norm",
        "--positional",
        "--float32",
        "--epochs",
        "--batch-size",
        "--lr",
        "--seed",
        "--sample",
        "--temperature",
        "--prompt",
        "--save",
        "--no-progress",
    ]:
        assert flag in out
    for per_task in ["--epochs EPOCHS", "--batch-size BATCH_SIZE", "--lr LR", "--train-size TRAIN_SIZE"]:
        assert "(default: None)" not in out.split(per_task, 1)[1].split("\n  -", 1)[0]


def test_bad_sizes_are_reported(capsys):
    assert main(["train", "transformer", "--d-model", "6", "--heads", "4", "--train-size", "8"]) == 2
    assert "d_model must be divisible" in capsys.readouterr().err
