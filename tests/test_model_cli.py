"""The commands that use model files: train --save, then predict, evaluate, generate, summary.

The models are trained by the command line in a process of their own, read back by the
commands in fresh processes, and by :func:`prelens.load_model` here: the outputs must be
identical. Every user mistake is one line on stderr and exit status 2.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prelens import forward, load_model, save_model
from prelens.cli import main
from prelens.cli.predict import probabilities
from prelens.datasets import IRIS_CLASSES, iris_arrays, load_dataset, make_sequences
from prelens.datasets.sequences import CharVocab, SequenceTask
from prelens.io import save_checkpoint
from prelens.nn import generate, mlp, token_cross_entropy
from prelens.train import evaluate

ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
SMALL_LM = ["--d-model", "8", "--heads", "2", "--d-ff", "16", "--layers", "1", "--epochs", "1", "--no-progress"]


def prelens(*argv: str) -> subprocess.CompletedProcess[str]:
    """``prelens ARGV`` in a fresh process."""
    return subprocess.run([sys.executable, "-m", "prelens", *argv], capture_output=True, text=True, env=ENV)


def ok(*argv: str) -> str:
    done = prelens(*argv)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def iris_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("iris") / "iris.prelens"
    ok("train", "mlp", "--epochs", "15", "--hidden", "6", "--seed", "3", "--no-progress", "--save", str(path))
    return path


@pytest.fixture(scope="module")
def iris_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    xs, ys = iris_arrays()
    path = tmp_path_factory.mktemp("data") / "iris.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sepal_length", "sepal_width", "petal_length", "petal_width", "species"])
        writer.writerows([*x, IRIS_CLASSES[y]] for x, y in zip(xs.tolist(), ys.tolist()))
    return path


@pytest.fixture(scope="module")
def reverse_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reverse") / "m.prelens"
    task = ["--task", "reverse", "--length", "3", "--symbols", "4", "--train-size", "200", "--test-size", "20"]
    ok("train", "transformer", *task, *SMALL_LM, "--save", str(path))
    return path


# ------------------------------------------------------------------ language models


def test_a_trained_transformer_generates_the_same_from_the_command_line_and_from_python(reverse_model: Path):
    answer = ok("generate", str(reverse_model), "--prompt", "3 1 0").split()
    lens, params, meta = load_model(reverse_model)
    assert meta["vocabulary"] == {"task": "reverse", "length": 3, "symbols": 4} and meta["context"] == 7
    task = SequenceTask("reverse", 3, 4)
    prompts = task.prompts(np.array([[3, 1, 0]]))
    expected = generate(lens, params, prompts, 3, max_len=7)[0, prompts.shape[1] :]
    assert answer == [str(int(a)) if a < 4 else ("[BOS]" if a == task.bos else "[SEP]") for a in expected]


def test_a_text_model_carries_its_vocabulary(tmp_path: Path):
    path = tmp_path / "text.prelens"
    task = ["--task", "text", "--block", "12", "--train-size", "40", "--test-size", "8", "--sample", "5"]
    ok("train", "transformer", *task, *SMALL_LM, "--save", str(path))
    out = ok("generate", str(path), "--prompt", "Shall I", "--steps", "25", "--temperature", "0.7", "--seed", "4")
    lens, params, meta = load_model(path)
    vocab = CharVocab(meta["vocabulary"]["chars"])
    ids = generate(lens, params, vocab.encode("Shall I")[None], 25, max_len=12, temperature=0.7, rng=4)
    assert out == vocab.decode(ids[0]) + "\n"
    assert out.startswith("Shall I") and len(out) == len("Shall I") + 25 + 1
    bad = prelens("generate", str(path), "--prompt", "Shall I ☃")
    assert bad.returncode == 2 and "'☃' not in the model's vocabulary" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_evaluate_a_language_model_on_held_out_sequences(reverse_model: Path, tmp_path: Path):
    x, y = make_sequences(SequenceTask("reverse", 3, 4), 30, rng=9)
    np.savez(tmp_path / "held.npz", x=x, y=y)
    out = ok("evaluate", str(reverse_model), str(tmp_path / "held.npz"))
    lens, params, _ = load_model(reverse_model)
    loss = evaluate(lens, token_cross_entropy(), params, x, y)
    guess = forward(lens, params, x).argmax(axis=-1)
    right = int((guess[y >= 0] == y[y >= 0]).sum())
    assert f"loss (token_cross_entropy): {loss:.6g}" in out
    assert f"({right} of 90 counted positions)" in out


# ------------------------------------------------------------------ classifiers


def test_predict_gives_what_load_model_gives(iris_model: Path, iris_csv: Path, tmp_path: Path):
    lens, params, meta = load_model(iris_model)
    assert meta["kind"] == "classifier" and meta["classes"] == list(IRIS_CLASSES)
    xs, _ = iris_arrays()
    logits = forward(lens, params, xs)  # raw features: the file carries the standardisation
    labels = ok("predict", str(iris_model), _features(iris_csv))
    assert labels.splitlines() == ["label", *[IRIS_CLASSES[k] for k in logits.argmax(axis=1)]]
    ok("predict", str(iris_model), _features(iris_csv), "--outputs", "proba", "--output", str(tmp_path / "p.csv"))
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(IRIS_CLASSES)
    assert np.array_equal(np.array(rows[1:], dtype=float), probabilities(logits))
    np.save(tmp_path / "x.npy", xs)
    ok("predict", str(iris_model), str(tmp_path / "x.npy"), "--outputs", "raw", "--output", str(tmp_path / "y.npy"))
    assert np.array_equal(np.load(tmp_path / "y.npy"), logits)
    ok("predict", str(iris_model), str(tmp_path / "x.npy"), "--output", str(tmp_path / "labels.npy"))
    assert np.array_equal(np.load(tmp_path / "labels.npy"), logits.argmax(axis=1))


def _features(iris_csv: Path) -> str:
    path = iris_csv.with_name("features.csv")
    if not path.exists():
        with open(iris_csv) as f, open(path, "w", newline="") as g:
            csv.writer(g).writerows(row[:-1] for row in csv.reader(f))
    return str(path)


def test_the_saved_model_takes_raw_features_and_matches_training(iris_model: Path):
    """The trained MLP on standardised rows equals the file's normalize >> MLP on raw rows."""
    lens, params, _ = load_model(iris_model)
    standardized = load_dataset("iris", 0.2, 3, standardize_features=True)
    raw = load_dataset("iris", 0.2, 3)
    _, net = lens.parts  # normalize(4) >> mlp: the parameters are (mlp's, ())
    np.testing.assert_allclose(
        forward(lens, params, raw.x_test), forward(net, params[0], standardized.x_test), rtol=1e-12, atol=1e-12
    )


def test_evaluate_reports_accuracy_and_the_confusion_matrix(iris_model: Path, iris_csv: Path):
    out = ok("evaluate", str(iris_model), str(iris_csv))
    lens, params, _ = load_model(iris_model)
    xs, ys = iris_arrays()
    guess = forward(lens, params, xs).argmax(axis=1)
    assert f"data {iris_csv}: 150 examples" in out
    assert f"({int((guess == ys).sum())} of 150 examples)" in out
    table = out.split("confusion matrix (rows: true class, columns: predicted class)\n")[1].splitlines()
    counts = np.array([[int(v) for v in line.split()[1:]] for line in table[1:4]])
    assert np.array_equal(counts, np.bincount(ys * 3 + guess, minlength=9).reshape(3, 3))
    by_index = iris_csv.with_name("by_index.csv")
    with open(iris_csv) as f, open(by_index, "w", newline="") as g:
        rows = list(csv.reader(f))
        header = [[r[-1], *r[:-1]] for r in rows[:1]]
        csv.writer(g).writerows(header + [[str(IRIS_CLASSES.index(r[-1])), *r[:-1]] for r in rows[1:]])
    assert ok("evaluate", str(iris_model), str(by_index), "--label-column", "0") == out.replace(
        str(iris_csv), str(by_index)
    )


def test_summary_prints_the_table_and_draws_the_diagram(iris_model: Path, tmp_path: Path):
    out = ok("summary", str(iris_model), "--diagram", str(tmp_path / "d.png"))
    assert "normalize(4) >> mlp(4→6→3, tanh, last=None, input_delta=False)" in out
    assert "input: f64[1,4]" in out and "total parameters: 51" in out
    assert (tmp_path / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_of_a_file_without_input_metadata_needs_an_input_shape(tmp_path: Path):
    net = mlp(3, [2])
    save_model(tmp_path / "m.prelens", net, net.init(0))
    code = main(["summary", str(tmp_path / "m.prelens"), "--input-shape", "2,3"])
    assert code == 0


# ------------------------------------------------------------------ user mistakes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["predict", "{m}", "{tmp}/none.csv"], r"INPUT '.*none\.csv': no such file"),
        (["predict", "{tmp}/none.prelens", "{csv}"], r"MODEL '.*none\.prelens': no such file"),
        (["predict", "{m}", "{tmp}/x.txt"], r"INPUT '.*x\.txt': expected a \.csv or \.npy file"),
        (
            ["predict", "{m}", "{feat}", "--output", "{tmp}/no/dir/y.csv"],
            r"--output .*: the directory .* does not exist",
        ),
        (["predict", "{m}", "{feat}", "--output", "{tmp}/y.json"], r"--output .*: the name must end in \.csv or \.npy"),
        (["predict", "{m}", "{feat}", "--batch-size", "0"], r"--batch-size must be an int >= 1, got 0"),
        (["predict", "{m}", "{csv}"], r"row 1, column 5: 'setosa' is not a number \(predict reads inputs only"),
        (["predict", "{m}", "{wide}"], r"the model takes rows of shape 4, the file holds 2×3"),
        (["predict", "{params}", "{feat}"], r"holds parameters only"),
        (["evaluate", "{m}", "{tmp}/d.npz"], r"DATA '.*d\.npz': no such file"),
        (["evaluate", "{m}", "{csv}", "--label-column", "7"], r"--label-column 7: DATA .* has 5 columns"),
        (
            ["evaluate", "{m}", "{badlabel}"],
            r"row 1: unknown label 'rose' \(the classes are setosa, versicolor, virginica\)",
        ),
        (["generate", "{m}", "--prompt", "x"], r"MODEL .*: a classifier, not a language model file"),
        (["generate", "{m}", "--prompt", "x", "--steps", "0"], r"--steps must be an int >= 1, got 0"),
        (["generate", "{m}", "--prompt", "x", "--temperature", "-1"], r"--temperature must be a finite number >= 0"),
        (["summary", "{m}", "--diagram", "{tmp}/d.gif"], r"--diagram .*: the name must end in \.png or \.svg or \.pdf"),
        (["summary", "{m}", "--input-shape", "1,x"], r"--input-shape must be sizes separated by commas"),
        (["summary", "{m}", "--depth", "-1"], r"--depth must be an int >= 0, got -1"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(
    argv: list[str], message: str, iris_model: Path, iris_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    (tmp_path / "x.txt").write_text("1,2\n")
    np.save(tmp_path / "wide.npy", np.ones((2, 3)))
    (tmp_path / "bad.csv").write_text("5.1,3.5,1.4,0.2,rose\n")
    net = mlp(4, [3])
    save_checkpoint(tmp_path / "params.npz", net.init(0))
    values = {
        "m": str(iris_model), "csv": str(iris_csv), "feat": _features(iris_csv), "tmp": str(tmp_path),
        "wide": str(tmp_path / "wide.npy"), "badlabel": str(tmp_path / "bad.csv"), "params": str(tmp_path / "params.npz"),
    }  # fmt: skip
    code = main([a.format(**values) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"prelens {argv[0]}: ")
    assert re.search(message, err), err


def test_the_model_commands_are_listed(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for command in ("predict", "evaluate", "generate", "summary"):
        assert command in text


@pytest.mark.parametrize("command", ["predict", "evaluate", "generate", "summary"])
def test_help_explains_every_argument(command: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "Examples:" in text
    from prelens.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    for action in sub._actions:
        if action.dest != "help":
            assert action.help and len(action.help) > 10, action.dest
            assert all(flag in text for flag in action.option_strings)
