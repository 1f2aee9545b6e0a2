"""The training runtime: BLAS threads chosen from the problem's sizes (overridable), freed memory kept."""

from __future__ import annotations

import numpy as np
import pytest

from prelens.errors import ArgumentError
from prelens.nn import decoder_lm, mlp
from prelens.train import blas_threads, choose_blas_threads, retain_freed_memory
from prelens.train._runtime import MIN_WORK_PER_THREAD, USER_ENV, current_blas_threads

MNIST = mlp(784, [256, 128, 10]).init(0)  # largest weight 784 x 256


@pytest.fixture
def clean_env(monkeypatch):
    for name in (*USER_ENV, "PRELENS_BLAS_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_small_products_get_one_thread_large_ones_more_up_to_the_cpus():
    tiny = mlp(4, [8, 8, 3]).init(0)
    assert choose_blas_threads(tiny, np.zeros((16, 4)), cpus=8) == 1
    rows = 2 * MIN_WORK_PER_THREAD // (784 * 256) + 1  # just over two threads' worth
    assert choose_blas_threads(MNIST, np.zeros((rows, 784)), cpus=8) == 2
    assert choose_blas_threads(MNIST, np.zeros((128, 784)), cpus=8) == 8  # 25.7 M multiply-adds
    assert choose_blas_threads(MNIST, np.zeros((128, 784)), cpus=1) == 1
    assert choose_blas_threads((), np.zeros((10**6, 4))) == 1  # no weight matrix: nothing to share


def test_rows_count_positions_for_token_ids_and_sequences():
    lm = decoder_lm(64, 64, 4, 256, 2, 32).init(0)  # largest weight 64 x 256
    ids = np.zeros((2, 32), np.int64)  # 64 rows: 1 M multiply-adds
    seqs = np.zeros((2, 32, 64))  # the same rows as float features
    assert choose_blas_threads(lm, ids, cpus=4) == choose_blas_threads(lm, seqs, cpus=4) == 1
    big = np.zeros((16, 32), np.int64)  # 512 rows: 8.4 M
    assert choose_blas_threads(lm, big, cpus=8) == 4 == choose_blas_threads(lm, [big, big[:1]], cpus=8)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_cpu_count_is_refused(bad):
    with pytest.raises(ArgumentError, match=r"choose_blas_threads: cpus"):
        choose_blas_threads(MNIST, np.zeros((2, 784)), cpus=bad)


@pytest.mark.parametrize("bad", [None, 3, "x", np.float64(2.0), np.zeros(()), {}])
def test_a_batch_that_is_no_array_is_refused(bad):
    with pytest.raises(ArgumentError, match=r"choose_blas_threads: batch"):
        choose_blas_threads(MNIST, bad)


def test_an_explicit_number_is_set_for_the_block_and_restored(clean_env):
    before = current_blas_threads()
    with blas_threads(1) as n:
        assert n == 1 == current_blas_threads()
    assert current_blas_threads() == before


def test_auto_gives_small_products_one_thread_and_measures_the_others(clean_env, monkeypatch):
    import prelens.train._runtime as R

    tiny = mlp(4, [8, 8, 3]).init(0)
    with blas_threads(2):  # from a known state
        with blas_threads("auto", params=tiny, batch=np.zeros((16, 4))) as n:
            assert n == 1 == current_blas_threads()
    asked = []
    monkeypatch.setattr(R, "_cpus", lambda: 2)
    for verdict in (1, 2):
        monkeypatch.setattr(R, "_probe", lambda ctl, p, b, t, verdict=verdict: asked.append(t) or verdict)
        with blas_threads(1), blas_threads("auto", params=MNIST, batch=np.zeros((128, 784))) as n:
            assert n == verdict == current_blas_threads()
    assert asked == [2, 2]


def test_the_probe_keeps_one_thread_unless_more_are_faster(clean_env):
    import prelens.train._runtime as R

    ctl = R._controller()
    n = R._probe(ctl, MNIST, np.zeros((64, 784)), 2, repeats=3)
    assert n in (1, 2)
    assert R._probe(ctl, MNIST, np.zeros((64, 784)), 1, repeats=3) == 1


def test_the_environment_overrides_auto(clean_env):
    clean_env.setenv("PRELENS_BLAS_THREADS", "1")
    with blas_threads("auto") as n:
        assert n == 1 == current_blas_threads()
    clean_env.setenv("PRELENS_BLAS_THREADS", "auto")
    with blas_threads(1), blas_threads("auto") as n:  # auto without sizes: BLAS left as it is
        assert n == 1
    clean_env.delenv("PRELENS_BLAS_THREADS")
    clean_env.setenv("OPENBLAS_NUM_THREADS", "1")  # the user chose for every program: auto keeps it
    with blas_threads(1), blas_threads("auto", params=MNIST, batch=np.zeros((10**5, 784))) as n:
        assert n == 1


@pytest.mark.parametrize("bad", ["0", "two", "-1", "1.5"])
def test_a_bad_environment_value_is_one_clear_error(clean_env, bad):
    clean_env.setenv("PRELENS_BLAS_THREADS", bad)
    with pytest.raises(ArgumentError, match=r"blas_threads: the environment variable PRELENS_BLAS_THREADS"):
        with blas_threads():
            pass


@pytest.mark.parametrize("bad", [0, -2, 1.5, "many", True, None])
def test_a_bad_thread_count_is_refused(bad):
    with pytest.raises(ArgumentError, match=r"blas_threads: threads"):
        with blas_threads(bad):
            pass


def test_retaining_freed_memory_is_idempotent():
    first = retain_freed_memory()
    assert isinstance(first, bool) and retain_freed_memory() is first


# ------------------------------------------------------------------ prelens train --blas-threads


def test_train_runs_in_the_chosen_runtime(monkeypatch, capsys):
    import prelens.train._fit as T  # the commands pass --blas-threads to fit, which sets them
    from prelens.cli import main

    seen = []
    real = T._blas_threads

    def spy(threads="auto", **kw):
        seen.append((threads, kw["params"] is not None, kw["batch"].shape))
        return real(threads, **kw)

    monkeypatch.setattr(T, "_blas_threads", spy)
    argv = ["--dataset", "iris", "--epochs", "1", "--no-progress", "--blas-threads", "1"]
    assert main(["train", "mlp", *argv]) == 0
    assert seen == [(1, True, (16, 4))]  # the number given, one batch of rows of the model's inputs
    assert main(["train", "mlp", *argv[:-2]]) == 0
    assert seen[-1][0] == "auto"
    small = ["--train-size", "40", "--test-size", "4", "--epochs", "1", "--batch-size", "8", "--d-model", "8"]
    small += ["--heads", "2", "--d-ff", "8", "--layers", "1", "--no-progress", "--blas-threads", "2"]
    assert main(["train", "transformer", *small]) == 0
    assert seen[-1] == (2, True, (8, 17))  # token ids: the rows are batch x positions


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_on_the_command_line_is_exit_2(bad, capsys):
    from prelens.cli import main

    with pytest.raises(SystemExit) as info:
        main(["train", "transformer", "--blas-threads", bad])
    assert info.value.code == 2
    assert "--blas-threads: expected auto or a number of threads >= 1" in capsys.readouterr().err


def test_fit_sizes_blas_threads_for_its_run_and_restores_them(clean_env):
    from prelens.learn import sgd
    from prelens.nn import mse
    from prelens.train import fit

    seen = []

    class Spy:
        def on_epoch_end(self, epoch, history, params, opt_state):
            seen.append(current_blas_threads())
            return False

    with blas_threads(2):  # as if BLAS ran two threads before: fit's "auto" gives this small model one
        data = (np.ones((8, 4)), np.zeros((8, 3)))
        fit(mlp(4, [3]), mse, data, 2, 4, sgd(0.1), 0, progress=False, callbacks=[Spy()])
        assert seen == [1, 1] and current_blas_threads() == 2
        seen.clear()
        fit(mlp(4, [3]), mse, data, 1, 4, sgd(0.1), 0, progress=False, callbacks=[Spy()], blas_threads=None)
        assert seen == [2]


@pytest.mark.parametrize("bad", [0, -1, "two", 1.5, True])
def test_fit_refuses_a_bad_thread_count_before_training(bad):
    from prelens.learn import sgd
    from prelens.nn import mse
    from prelens.train import fit

    with pytest.raises(ArgumentError, match="threads"):
        fit(mlp(4, [3]), mse, (np.ones((8, 4)), np.zeros((8, 3))), 1, 4, sgd(0.1), blas_threads=bad)
