"""What a command-line user trips on (fourth wave): each mistake is one line, a nonzero exit and no traceback,
found before the work; what the commands report and save is what happened."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prelens.cli import train_mnist1d
from prelens.io import load_metadata
from tests.test_cli import LM, M1D, MLP, assert_refused, cli
from tests.test_cli import no_training as no_training  # a fixture

TINY_LM = ["--d-model", "8", "--heads", "2", "--d-ff", "8", "--layers", "1", "--epochs", "1"]


def one_line(code: Any, err: str, status: int) -> None:
    assert code == status and err.count("\n") == 1 and "Traceback" not in err, (code, err)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An Iris classifier and a reverse-task language model, trained by the command line in this process."""
    from prelens.cli import main

    d = tmp_path_factory.mktemp("models")
    paths = {"iris": str(d / "iris.prelens"), "lm": str(d / "lm.prelens")}
    assert main([*MLP, "--epochs", "2", "--save", paths["iris"]]) == 0
    task = ["--length", "2", "--symbols", "3", "--train-size", "16", "--test-size", "4"]
    assert main([*LM, *TINY_LM, *task, "--save", paths["lm"]]) == 0
    return paths


def test_train_mlp_with_no_test_part_trains_and_reports(capsys: pytest.CaptureFixture[str]):
    code, out, err = cli([*MLP, "--epochs", "2", "--test-fraction", "0"], capsys)
    assert code == 0 and "train accuracy" in out and "held-out" not in out, err


@pytest.mark.parametrize("raw", [[], ["--raw-features"]])
def test_a_test_fraction_that_leaves_no_training_rows_is_refused_before_training(
    raw: list[str], capsys: pytest.CaptureFixture[str], no_training: None
):
    code, out, err = cli([*MLP, "--test-fraction", "0.99", *raw], capsys)
    assert_refused(code, out, err, "prelens train mlp: stratified_split: test_fraction=0.99 leaves no rows to train on")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*MLP, "--samples", "50"], "prelens train mlp: --samples needs --dataset moons, spirals or glyphs"),
        ([*MLP, "--momentum", "0.5"], "prelens train mlp: --momentum needs --optimizer momentum"),
        ([*LM, "--block", "16"], "prelens train transformer: --block needs --task text"),
        ([*LM, "--prompt", "When"], "prelens train transformer: --prompt needs --task text"),
        ([*LM, "--task", "text", "--length", "4"], "prelens train transformer: --length needs --task copy, reverse"),
        (["demo", "--folds", "151"], "prelens demo: --folds must be 0 (skip) or an int from 2 to 150"),
    ],
)
def test_flags_that_would_be_ignored_or_fail_late_are_refused_first(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], no_training: None, monkeypatch: Any
):
    from prelens.cli import demo

    monkeypatch.setattr(demo, "_toy", lambda *a: pytest.fail("the demo started before its flags were checked"))
    code, out, err = cli(argv, capsys)
    assert_refused(code, out, err, message)


def test_a_diverging_training_is_one_line_and_says_what_was_saved(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "last.prelens"
    argv = [*MLP, "--optimizer", "sgd", "--lr", "1e300", "--activation", "relu", "--epochs", "5", "--save", str(path)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings are not the user's business: fit reports it
        code, out, err = cli(argv, capsys)
    one_line(code, err, 1)
    assert "the loss became non-finite at epoch 1/5" in err and ".opt_state" not in err
    assert f"saved the parameters of the last good step (1) to {path}" in out and path.exists()


def test_an_interrupted_mnist1d_run_says_so_and_its_file_records_the_steps_run(
    mnist1d_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    real = train_mnist1d.train_mnist1d
    monkeypatch.setattr(train_mnist1d, "train_mnist1d", lambda *a, **k: real(*a, **{**k, "steps": 3}))  # Ctrl-C
    path = tmp_path / "m.prelens"
    code, out, err = cli([*M1D, "--model", "logreg", "--steps", "10", "--save", str(path)], capsys)
    assert code == 0, err
    assert "interrupted after 3 of 10 steps" in out
    assert load_metadata(path)["metadata"]["steps"] == 3


@pytest.mark.parametrize("kind", ["npy", "npz"])
def test_data_with_no_rows_is_refused(kind: str, models: dict[str, str], tmp_path: Path, capsys: Any):
    if kind == "npy":
        np.save(tmp_path / "x.npy", np.zeros((0, 4)))
        argv = ["predict", models["iris"], str(tmp_path / "x.npy")]
    else:
        np.savez(tmp_path / "d.npz", x=np.zeros((0, 4)), y=np.zeros(0, dtype=np.int64))
        argv = ["evaluate", models["iris"], str(tmp_path / "d.npz")]
    code, out, err = cli(argv, capsys)
    assert_refused(code, out, err, f"prelens {argv[0]}: ", "no rows")


def test_a_model_of_series_with_a_channel_axis_reads_a_table_of_flat_rows(tmp_path: Path, capsys: Any):
    from prelens import save_model
    from prelens.nn import conv1d, dense, flatten

    net = conv1d(1, 2, 3) >> flatten() >> dense(12, 3, None)
    path = str(tmp_path / "cnn.prelens")
    save_model(path, net, net.init(0), metadata={"classes": ["a", "b", "c"], "input": {"shape": [8, 1]}})
    np.savetxt(tmp_path / "x.csv", np.arange(16.0).reshape(2, 8), delimiter=",")
    code, out, err = cli(["predict", path, str(tmp_path / "x.csv")], capsys)
    assert code == 0 and out.splitlines()[0] == "label" and len(out.splitlines()) == 3, err


def test_a_write_that_fails_is_one_line(models: dict[str, str], tmp_path: Path, capsys: Any, monkeypatch: Any):
    import builtins

    csv = tmp_path / "x.csv"
    csv.write_text("5.1,3.5,1.4,0.2\n")
    real_open = builtins.open

    def full_disk(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if "w" in mode:
            raise OSError(28, "No space left on device")
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", full_disk)
    code, _, err = cli(["predict", models["iris"], str(csv), "--output", str(tmp_path / "y.csv")], capsys)
    one_line(code, err, 1)
    assert err.startswith("prelens predict: ") and "No space left on device" in err


def test_an_example_too_large_for_memory_is_one_line(models: dict[str, str], capsys: Any):
    code, _, err = cli(["summary", models["iris"], "--input-shape", "99999999999,4"], capsys)
    one_line(code, err, 1)
    assert err.startswith("prelens summary: ") and "TiB" in err


def test_bench_scaling_checks_its_output_directory_first(tmp_path: Path, capsys: Any, monkeypatch: Any):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "matplotlib" else real(name))
    (tmp_path / "file").write_text("")
    code, out, err = cli(["bench", "--scaling", "--grid", "tiny", "--out", str(tmp_path / "file")], capsys)
    assert_refused(code, out, err, "prelens bench: --out", "not a directory")


def test_generate_names_the_file_and_what_it_holds(models: dict[str, str], capsys: Any):
    code, out, err = cli(["generate", models["iris"], "--prompt", "1 2"], capsys)
    assert_refused(code, out, err, f"MODEL {models['iris']!r}: a classifier, not a language model")


def test_a_non_finite_input_gets_no_hint_about_labels(models: dict[str, str], tmp_path: Path, capsys: Any):
    (tmp_path / "x.csv").write_text("5.1,nan,1.4,0.2\n")
    code, out, err = cli(["predict", models["iris"], str(tmp_path / "x.csv")], capsys)
    assert_refused(code, out, err, "row 1, column 2 is not a finite number")
    assert "labelled data" not in err


@pytest.mark.parametrize("flag", ["--save", "--output", "--diagram"])
def test_the_help_says_an_existing_output_is_replaced(flag: str, capsys: Any):
    command = {"--save": ["train", "mlp"], "--output": ["predict"], "--diagram": ["summary"]}[flag]
    code, out, _ = cli([*command, "--help"], capsys)
    option = out.split(f"  {flag} PATH")[1].split("\n  -")[0]
    assert code == 0 and "a file there" in " ".join(option.split()), option
    assert "(default: None)" not in out and "(default: False)" not in out


def test_a_csv_with_a_byte_order_mark_keeps_its_first_row(models: dict[str, str], tmp_path: Path, capsys: Any):
    (tmp_path / "x.csv").write_bytes(b"\xef\xbb\xbf5.1,3.5,1.4,0.2\n6.7,3.0,5.2,2.3\n")  # Excel's "CSV UTF-8"
    code, out, err = cli(["predict", models["iris"], str(tmp_path / "x.csv")], capsys)
    assert code == 0 and out.splitlines() == ["label", "setosa", "virginica"], (out, err)


def test_predict_refuses_to_write_over_its_input(models: dict[str, str], tmp_path: Path, capsys: Any):
    path = tmp_path / "x.csv"
    path.write_text("5.1,3.5,1.4,0.2\n")
    code, out, err = cli(["predict", models["iris"], str(path), "--output", str(path)], capsys)
    assert_refused(code, out, err, "prelens predict: --output", "is INPUT")
    assert path.read_text() == "5.1,3.5,1.4,0.2\n"


def test_output_piped_into_a_reader_that_stops_early_ends_quietly(models: dict[str, str], tmp_path: Path):
    import subprocess
    import sys

    rows = np.tile([5.1, 3.5, 1.4, 0.2], (30000, 1))
    np.savetxt(tmp_path / "x.csv", rows, delimiter=",")
    np.savetxt(tmp_path / "xy.csv", np.c_[rows, np.zeros(len(rows))], delimiter=",")
    for command, data in (("predict", "x.csv"), ("evaluate", "xy.csv")):  # a long output, a short one
        argv = [sys.executable, "-m", "prelens", command, models["iris"], str(tmp_path / data)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.close()  # prelens ... | head -0
        _, err = proc.communicate(timeout=120)
        assert err == "" and proc.returncode == 1, err


def test_evaluate_reads_class_indices_written_as_floats(models: dict[str, str], tmp_path: Path, capsys: Any):
    np.savetxt(tmp_path / "xy.csv", [[5.1, 3.5, 1.4, 0.2, 0], [6.7, 3.0, 5.2, 2.3, 2]], delimiter=",")  # 0.0e+00
    code, out, err = cli(["evaluate", models["iris"], str(tmp_path / "xy.csv")], capsys)
    assert code == 0 and "(2 of 2 examples)" in out, err
    (tmp_path / "half.csv").write_text("5.1,3.5,1.4,0.2,1.5\n")
    code, out, err = cli(["evaluate", models["iris"], str(tmp_path / "half.csv")], capsys)
    assert_refused(code, out, err, "row 1: unknown label '1.5'")


def test_ctrl_c_in_the_demos_training_ends_the_demo(capsys: Any, monkeypatch: pytest.MonkeyPatch):
    from prelens.cli import demo

    real = demo.fit

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        params, state, history = real(*args, **kwargs)
        history.interrupted = True  # as fit hands back a run stopped by Ctrl-C
        return params, state, history

    monkeypatch.setattr(demo, "fit", interrupted)
    monkeypatch.setattr(demo, "_iris_faithful", lambda args: None)
    code, out, err = cli(["demo", "--toy-steps", "2", "--epochs", "2", "--folds", "2", "--no-progress"], capsys)
    assert code == 130 and err == "prelens: interrupted\n" and "cross-validated" not in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--peers", "--no-chain"], "prelens bench: --no-chain needs the plain timings (no --peers, --profile"),
        (["--scaling", "--no-chain"], "prelens bench: --no-chain needs the plain timings"),
        (["--scaling", "--case", "small"], "prelens bench: --case needs the plain timings, --peers or --profile"),
    ],
)
def test_bench_flags_a_mode_would_ignore_are_refused(flags: list[str], message: str, capsys: Any, monkeypatch: Any):
    import prelens_bench._command

    monkeypatch.setattr(prelens_bench._command, "run_command", lambda *a: pytest.fail("the benchmark started"))
    code, out, err = cli(["bench", *flags], capsys)
    assert_refused(code, out, err, message)


def test_evaluate_refuses_labels_that_are_one_number_or_too_large_a_class_index(tmp_path: Path, capsys: Any):
    from prelens import save_model
    from prelens.nn import mlp

    net = mlp(4, [3], None)
    path = str(tmp_path / "m.prelens")  # no class names in its metadata: any class index is read
    save_model(path, net, net.init(0), metadata={"loss": "softmax_cross_entropy", "input": {"shape": [4]}})
    np.savez(tmp_path / "d.npz", x=np.ones((2, 4)), y=np.array(1))
    code, out, err = cli(["evaluate", path, str(tmp_path / "d.npz")], capsys)
    assert_refused(code, out, err, "y must hold one label (row) of numbers per example of x")
    (tmp_path / "big.csv").write_text("5.1,3.5,1.4,0.2,1e30\n")
    code, out, err = cli(["evaluate", path, str(tmp_path / "big.csv")], capsys)
    assert_refused(code, out, err, "row 1: class index 1e+30 out of range")


def test_summary_refuses_an_example_no_array_can_hold(tmp_path: Path, capsys: Any):
    from prelens import save_model
    from prelens.nn import mlp

    net = mlp(4, [3], None)
    path = str(tmp_path / "m.prelens")  # a damaged file's metadata: 70 axes and the batch axis, then too many numbers
    save_model(path, net, net.init(0), metadata={"input": {"shape": [1] * 70}})
    code, out, err = cli(["summary", path], capsys)
    assert_refused(code, out, err, "the model file does not say what its input is: pass --input-shape")
    for shape in (",".join(["1"] * 65), "99999999999,99999999999,99999999999"):
        code, out, err = cli(["summary", path, "--input-shape", shape], capsys)
        assert_refused(code, out, err, f"--input-shape {shape!r}: more axes (at most 64) or numbers than an array")
    save_model(path, net, net.init(0), metadata={"input": {"shape": [2**40, 2**40]}})
    code, out, err = cli(["summary", path], capsys)
    assert_refused(code, out, err, "the model file does not say what its input is: pass --input-shape")


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_value_the_models_dtype_cannot_hold_is_refused_not_read_as_infinity(
    command: str, tmp_path: Path, capsys: Any
):
    from prelens import save_model
    from prelens.nn import mlp

    net = mlp(4, [3], None, dtype=np.float32)
    path = str(tmp_path / "m.prelens")
    meta = {"classes": ["a", "b", "c"], "loss": "softmax_cross_entropy", "input": {"shape": [4], "dtype": "float32"}}
    save_model(path, net, net.init(0), metadata=meta)
    (tmp_path / "x.csv").write_text("1e39,1,1,1\n1,1,1,1\n" if command == "predict" else "1e39,1,1,1,a\n1,1,1,1,b\n")
    code, out, err = cli([command, path, str(tmp_path / "x.csv")], capsys)  # 1e39 is past float32's largest
    assert_refused(code, out, err, "x.csv': a value outside the range of the model's float32")


def test_a_token_id_the_models_ints_cannot_hold_is_refused_not_wrapped_around(tmp_path: Path, capsys: Any):
    from prelens import save_model
    from prelens.nn import decoder_lm

    lm = decoder_lm(5, 8, 2, 8, 1, 4)
    path = str(tmp_path / "lm.prelens")
    save_model(path, lm, lm.init(0), metadata={"input": {"shape": [4], "dtype": "int64"}})
    for ids in (np.array([[2**64 - 1, 1, 1, 1]], dtype=np.uint64), np.array([[1e30, 1, 1, 1]])):
        np.save(tmp_path / "x.npy", ids)  # read as -1, or as int64's smallest, the embedding's error named those
        code, out, err = cli(["predict", path, str(tmp_path / "x.npy")], capsys)
        assert_refused(code, out, err, "x.npy': a value outside the range of the model's int64")
