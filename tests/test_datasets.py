"""Shipped data: Iris, the toy set, moons and spirals, splits and standardisation; MNIST-1D generated and cached."""

from __future__ import annotations

import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from prelens.datasets import (
    DATASETS,
    IRIS_CLASSES,
    MNIST1D_VERSION,
    TOY_XS,
    TOY_YS,
    cache_dir,
    iris_arrays,
    load_dataset,
    load_iris,
    load_mnist1d,
    load_toy,
    make_moons,
    make_spirals,
    standardize,
    stratified_folds,
    stratified_split,
)
from prelens.errors import ArgumentError, MissingExtraError

# ---------------------------------------------------------------------- iris


def test_iris_is_fishers_data():
    xs, ys = iris_arrays()
    assert xs.shape == (150, 4) and xs.dtype == np.float64 and ys.dtype == np.int64
    assert np.bincount(ys).tolist() == [50, 50, 50]
    # the well-known column means and a few rows of the classic table
    np.testing.assert_allclose(xs.mean(axis=0), [5.843333, 3.057333, 3.758, 1.199333], atol=1e-6)
    assert xs[0].tolist() == [5.1, 3.5, 1.4, 0.2] and ys[0] == 0
    assert xs[50].tolist() == [7.0, 3.2, 4.7, 1.4] and ys[50] == 1
    assert xs[149].tolist() == [5.9, 3.0, 5.1, 1.8] and ys[149] == 2


def test_iris_csv_has_a_header_and_is_shipped_in_the_package():
    text = resources.files("prelens.datasets").joinpath("data", "iris.csv").read_text()
    lines = text.splitlines()
    assert lines[0] == "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,species"
    assert len(lines) == 151 and lines[1] == "5.1,3.5,1.4,0.2,setosa"


def test_iris_arrays_are_copies():
    xs, _ = iris_arrays()
    xs[0, 0] = 100.0
    assert iris_arrays()[0][0, 0] == 5.1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_iris_split_is_stratified_disjoint_and_seeded(seed: int):
    split = load_iris(test_fraction=0.2, rng=seed)
    assert split.x_train.shape == (120, 4) and split.x_test.shape == (30, 4)
    assert np.bincount(split.y_test).tolist() == [10, 10, 10]
    assert split.class_names == IRIS_CLASSES and split.n_classes == 3 and split.n_features == 4
    rows = sorted(map(tuple, np.concatenate([split.x_train, split.x_test])))
    assert rows == sorted(map(tuple, iris_arrays()[0]))  # every flower exactly once
    again = load_iris(test_fraction=0.2, rng=seed)
    np.testing.assert_array_equal(again.x_test, split.x_test)
    other = load_iris(test_fraction=0.2, rng=seed + 10)
    assert not np.array_equal(other.x_test, split.x_test)


def test_iris_standardisation_uses_training_statistics_only():
    raw = load_iris(0.3, rng=5)
    std = load_iris(0.3, rng=5, standardize_features=True)
    np.testing.assert_allclose(std.x_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(std.x_train.std(axis=0), 1.0, rtol=1e-12)
    mean, scale = raw.x_train.mean(axis=0), raw.x_train.std(axis=0)
    np.testing.assert_allclose(std.x_test, (raw.x_test - mean) / scale, rtol=1e-12)


def test_iris_float32():
    split = load_iris(rng=0, dtype=np.float32, standardize_features=True)
    assert split.x_train.dtype == np.float32 and split.x_test.dtype == np.float32


# ---------------------------------------------------------------- splitting


def test_stratified_split_keeps_proportions():
    labels = np.array([0] * 30 + [1] * 10 + [2] * 20)
    train, test = stratified_split(labels, 0.5, rng=0)
    assert np.bincount(labels[test]).tolist() == [15, 5, 10]
    assert sorted([*train, *test]) == list(range(60))
    train, test = stratified_split(labels, 0.0, rng=0)
    assert len(test) == 0 and len(train) == 60


@pytest.mark.parametrize("fraction", [1.0, -0.1, "0.2"])
def test_stratified_split_rejects_bad_fractions(fraction: object):
    with pytest.raises(ArgumentError, match=r"stratified_split: test_fraction must be a number in \[0, 1\)"):
        stratified_split([0, 1], fraction, 0)  # type: ignore[arg-type]


def test_a_split_that_leaves_nothing_to_train_on_is_refused_and_numpy_fractions_are_numbers():
    """``load_iris(0.99)`` rounds every species' 49.5 test rows up to 50: no training set (fit then said "data must
    be at least one row"). A ``np.float32`` fraction is a number."""
    with pytest.raises(ArgumentError, match=r"^stratified_split: test_fraction=0\.99 leaves no rows to train on"):
        load_iris(test_fraction=0.99)
    assert len(load_iris(test_fraction=np.float32(0.5)).y_test) == 75


def test_stratified_folds_partition_and_balance():
    labels = np.array([0] * 7 + [1] * 5 + [2] * 3)
    folds = stratified_folds(labels, 3, rng=1)
    assert sorted(np.concatenate(folds).tolist()) == list(range(15))
    assert [len(f) for f in folds] == [5, 5, 5]
    for f in folds:
        counts = np.bincount(labels[f], minlength=3)
        assert counts[0] in (2, 3) and counts[1] in (1, 2) and counts[2] == 1
    with pytest.raises(ArgumentError, match=r"stratified_folds: k must be an int >= 2, got 1"):
        stratified_folds(labels, 1)


def test_standardize_constant_columns_and_dtype():
    train = np.array([[1.0, 5.0], [3.0, 5.0]], np.float32)
    a, b = standardize(train, np.array([[2.0, 6.0]], np.float32))
    assert a.dtype == np.float32 and a.tolist() == [[-1.0, 0.0], [1.0, 0.0]]
    assert b.tolist() == [[0.0, 1.0]]
    assert train.tolist() == [[1.0, 5.0], [3.0, 5.0]]  # inputs untouched


# ----------------------------------------------------------------------- toy


def test_toy_set_is_micrograds():
    assert TOY_XS.tolist() == [[2, 3, -1], [3, -1, 0.5], [0.5, 1, 1], [1, 1, -1]]
    assert TOY_YS.ravel().tolist() == [1, -1, -1, 1] and TOY_YS.shape == (4, 1)
    with pytest.raises(ValueError, match="read-only"):
        TOY_XS[0, 0] = 0.0
    xs, ys = load_toy()
    xs[0, 0] = 0.0
    assert TOY_XS[0, 0] == 2.0 and ys.flags.writeable


def test_toy_set_is_defined_once():
    """``prelens.nn.TOY_XS`` and ``prelens.faithful.TOY_XS`` (0.3) are this array, deprecated."""
    from prelens import faithful, nn

    for module in (nn, faithful):
        with pytest.warns(DeprecationWarning, match=r"TOY_XS is deprecated: use prelens\.datasets\.TOY_XS"):
            assert module.TOY_XS is TOY_XS
        with pytest.warns(DeprecationWarning, match=r"TOY_YS is deprecated: use prelens\.datasets\.TOY_YS"):
            assert module.TOY_YS is TOY_YS


# ----------------------------------------------------------- moons, spirals


def test_moons_geometry_and_seeding():
    xs, ys = make_moons(101, noise=0.0, rng=0)
    assert xs.shape == (101, 2) and np.bincount(ys).tolist() == [50, 51]
    upper, lower = xs[ys == 0], xs[ys == 1]
    np.testing.assert_allclose(np.hypot(upper[:, 0], upper[:, 1]), 1.0)
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1.0, lower[:, 1] - 0.5), 1.0)
    a, b = make_moons(50, rng=3), make_moons(50, rng=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(make_moons(50, rng=4)[0], a[0])


def test_spirals_geometry_and_seeding():
    xs, ys = make_spirals(100, classes=3, noise=0.0, rng=0)
    assert np.bincount(ys).tolist() == [34, 33, 33]
    radius = np.hypot(xs[:, 0], xs[:, 1])
    assert radius.max() == pytest.approx(1.0) and radius.min() == pytest.approx(0.0)
    # noiseless arm k: angle = 2π (k/3 + r), so every point sits on its own arm
    for k in range(3):
        arm = xs[ys == k]
        r = np.hypot(arm[:, 0], arm[:, 1])
        angle = 2 * np.pi * (k / 3 + r)
        np.testing.assert_allclose(arm, np.column_stack([r * np.cos(angle), r * np.sin(angle)]), atol=1e-12)
    np.testing.assert_array_equal(make_spirals(30, rng=1)[0], make_spirals(30, rng=1)[0])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_moons(1), r"make_moons: n must be an int >= 2, got 1"),
        (lambda: make_moons(10, noise=-1), r"make_moons: noise must be a number >= 0"),
        (lambda: make_spirals(10, classes=1), r"make_spirals: classes must be an int >= 2, got 1"),
        (lambda: make_spirals(10, turns=0), r"make_spirals: turns must be a number > 0"),
        (lambda: load_dataset("mnist"), r"load_dataset: name must be one of \['glyphs', 'iris', 'moons', 'spirals'\]"),
    ],
)
def test_generator_argument_errors(call: object, match: str):
    with pytest.raises(ArgumentError, match=match):
        call()  # type: ignore[operator]


def test_points_made_non_finite_by_a_huge_noise_are_refused():
    """They came back as inf and NaN (with numpy's RuntimeWarnings); make_glyphs already refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ArgumentError, match=r"^make_moons: noise must be a number small enough for finite points"):
            make_moons(100, noise=1e308)
        with pytest.raises(
            ArgumentError, match=r"^make_spirals: noise=1e\+308 and turns=1\.0 are too large for finite"
        ):
            make_spirals(100, noise=1e308)
        with pytest.raises(
            ArgumentError, match=r"^make_spirals: noise=0\.2 and turns=1e\+308 are too large for finite"
        ):
            make_spirals(100, turns=1e308)


def test_generators_take_numpy_numbers():
    # a numpy float (the result of a computation) was refused as "not a number >= 0"
    a, b = make_moons(50, noise=np.float32(0.5), rng=0), make_moons(50, noise=0.5, rng=0)
    np.testing.assert_array_equal(a[0], b[0])
    c, d = (
        make_spirals(np.int64(30), noise=np.float64(0.1), turns=np.float32(2.0)),
        make_spirals(30, noise=0.1, turns=2.0),
    )
    np.testing.assert_array_equal(c[0], d[0])


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_load_dataset_by_name(name: str):
    split = load_dataset(name, 0.25, rng=0, standardize_features=True)
    assert split.name == name
    assert len(split.y_train) + len(split.y_test) == {"iris": 150, "moons": 200, "spirals": 300, "glyphs": 1000}[name]
    assert split.x_train.shape[1] == split.n_features == len(split.feature_names)
    assert set(np.unique(split.y_test)) == set(range(split.n_classes))
    np.testing.assert_allclose(split.x_train.mean(axis=0), 0.0, atol=1e-12)
    same = load_dataset(name, 0.25, rng=0, standardize_features=True)
    np.testing.assert_array_equal(same.x_test, split.x_test)


def test_load_dataset_iris_matches_load_iris():
    np.testing.assert_array_equal(load_dataset("iris", 0.2, rng=4).x_test, load_iris(0.2, rng=4).x_test)


# ------------------------------------------------------------------ glyphs (issue 14)


def test_glyphs_are_the_ten_bitmaps_shifted_inked_and_noised():
    from prelens.datasets import GLYPHS, make_glyphs

    xs, ys = make_glyphs(200, noise=0.0, rng=3)
    assert xs.shape == (200, 64) and xs.dtype == np.float64 and ys.dtype == np.int64
    assert np.bincount(ys).tolist() == [20] * 10
    for image, digit in zip(xs.reshape(-1, 8, 8), ys):
        ink = image.max()
        assert 0.6 <= ink <= 1.0
        (rows, cols) = np.nonzero(image)
        top, left = rows.min(), cols.min() - np.nonzero(GLYPHS[digit])[1].min()
        np.testing.assert_array_equal(image[top : top + 7, left : left + 5], ink * GLYPHS[digit])
        assert np.count_nonzero(image) == np.count_nonzero(GLYPHS[digit])  # nothing else drawn
    inks = xs.max(axis=1)
    assert inks.min() < 0.65 and inks.max() > 0.95  # the ink strength varies from image to image
    noisy, same_ys = make_glyphs(200, noise=0.25, rng=3)
    assert np.array_equal(same_ys, ys) and 0.2 < float(np.std(noisy - xs)) < 0.3
    assert np.array_equal(make_glyphs(50, rng=1)[0], make_glyphs(50, rng=1)[0])
    assert not np.array_equal(make_glyphs(50, rng=1)[0], make_glyphs(50, rng=2)[0])
    assert not GLYPHS.flags.writeable and len({g.tobytes() for g in GLYPHS}) == 10


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, r"^make_glyphs: n must be an int >= 1, got 0$"),
        ({"noise": -0.1}, r"^make_glyphs: noise must be a number >= 0"),
        ({"noise": 1e308}, r"^make_glyphs: noise must be a number small enough for finite pixels"),
        ({"rng": "x"}, r"^make_glyphs: rng must be a numpy\.random\.Generator"),
    ],
)
def test_glyph_argument_errors(kwargs: dict, match: str):
    from prelens.datasets import make_glyphs

    with pytest.raises(ArgumentError, match=match):
        make_glyphs(**kwargs)


# ------------------------------------------------------------------- mnist1d


def test_mnist1d_is_the_papers_split_generated_once_and_cached(mnist1d_cache: Path):
    split = load_mnist1d()
    assert repr(split) == "Split(mnist1d: 4000 train + 1000 test, 40 features, 10 classes)"
    assert split.x_train.shape == (4000, 40) and split.x_test.shape == (1000, 40)
    assert split.x_train.dtype == np.float64 and split.y_train.dtype == np.int64
    assert sorted(set(split.y_train.tolist())) == list(range(10)) and split.class_names[3] == "3"
    # make_dataset centres the 5,000 series and scales them to standard deviation 1
    both = np.concatenate([split.x_train, split.x_test])
    assert abs(both.mean()) < 1e-9 and abs(both.std() - 1) < 1e-9
    assert (mnist1d_cache / "mnist1d.npz").is_file()
    with np.load(mnist1d_cache / "mnist1d.npz", allow_pickle=False) as f:  # no object arrays: no pickle
        assert all(f[k].dtype != object for k in f.files)
    series = load_mnist1d(channel=True)  # read from the cache
    assert series.x_train.shape == (4000, 40, 1) and series.x_test.shape == (1000, 40, 1)
    np.testing.assert_array_equal(series.x_train[..., 0], split.x_train)
    np.testing.assert_array_equal(series.y_test, split.y_test)


def test_mnist1d_is_the_mnist1d_packages_data_and_leaves_global_random_states_alone(mnist1d_cache: Path):
    import random

    from mnist1d.data import get_dataset_args, make_dataset

    np.random.seed(7)
    random.seed(7)
    expected_np, expected_py = np.random.random(), random.random()
    np.random.seed(7)
    random.seed(7)
    split = load_mnist1d(regenerate=True)
    assert (np.random.random(), random.random()) == (expected_np, expected_py)
    data = make_dataset(get_dataset_args())
    np.testing.assert_array_equal(split.x_train, data["x"])
    np.testing.assert_array_equal(split.y_test, data["y_test"])


def test_mnist1d_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PRELENS_CACHE", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own"
    monkeypatch.setenv("PRELENS_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "prelens"
    monkeypatch.delenv("PRELENS_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "prelens"


def test_mnist1d_damaged_cache_is_generated_anew(mnist1d_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from prelens.datasets import mnist1d as module

    load_mnist1d()  # the session's cache holds the real data
    real = module._read(mnist1d_cache / "mnist1d.npz")
    calls = []
    monkeypatch.setattr(module, "_generate", lambda: calls.append(1) or real)  # seconds saved
    monkeypatch.setenv("PRELENS_CACHE", str(tmp_path))
    (tmp_path / "mnist1d.npz").write_bytes(b"not a zip file")
    assert load_mnist1d().x_train.shape == (4000, 40) and len(calls) == 1
    assert load_mnist1d().x_train.shape == (4000, 40) and len(calls) == 1  # written back, read now
    np.savez(tmp_path / "mnist1d.npz", x_train=np.zeros((3, 40)))  # a foreign file
    assert load_mnist1d().x_test.shape == (1000, 40) and len(calls) == 2


def test_mnist1d_without_the_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import sys

    monkeypatch.setenv("PRELENS_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "mnist1d", None)  # import mnist1d raises ImportError
    monkeypatch.setitem(sys.modules, "mnist1d.data", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'prelens\[mnist1d\]'"):
        load_mnist1d()
    with pytest.raises(ArgumentError, match="channel"):
        load_mnist1d(channel="yes")  # type: ignore[arg-type]


def test_mnist1d_extra_pins_the_version_the_loader_names():
    import tomllib

    root = Path(__file__).resolve().parent.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["mnist1d"] == [f"mnist1d=={MNIST1D_VERSION}"]
    assert "prelens[mnist1d]" in extras["test"] and "prelens[mnist1d]" in extras["notebooks"]
