"""predict_proba and confusion_matrix on a classifier trained as users train one."""

from __future__ import annotations

import numpy as np
import pytest

from prelens import NonFiniteError
from prelens.datasets import load_iris
from prelens.errors import ArgumentError, StructureError
from prelens.learn import adam
from prelens.nn import linear, mlp, softmax_cross_entropy
from prelens.train import accuracy, confusion_matrix, fit, predict, predict_proba


@pytest.fixture(scope="module")
def trained() -> tuple:
    iris = load_iris(rng=1, standardize_features=True)
    model = mlp(4, [16, 3], last_activation=None)
    params, _, _ = fit(
        model, softmax_cross_entropy, (iris.x_train, iris.y_train), 40, 16, adam(0.02), 0, progress=False
    )
    return model, params, iris


def test_predict_proba_is_the_softmax_of_the_logits(trained: tuple) -> None:
    model, params, iris = trained
    probs = predict_proba(model, params, iris.x_test)
    logits = predict(model, params, iris.x_test)
    assert probs.shape == (len(iris.x_test), 3)
    assert np.allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-12) and (probs >= 0).all()
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert np.allclose(probs, expected, rtol=1e-12, atol=1e-15)
    assert np.array_equal(probs.argmax(axis=1), logits.argmax(axis=1))
    assert np.allclose(predict_proba(model, params, iris.x_test, batch_size=7), probs, rtol=1e-13)


def test_predict_proba_is_stable_and_binary_for_one_logit() -> None:
    probs = predict_proba(linear(2, 2), np.eye(2), np.array([[1000.0, 0.0], [-1000.0, 0.0]]))
    assert np.array_equal(probs, [[1.0, 0.0], [0.0, 1.0]])
    binary = predict_proba(linear(1, 1), np.ones((1, 1)), np.array([[0.0], [800.0], [-800.0], [np.log(3.0)]]))
    assert binary.shape == (4, 2) and np.allclose(binary, [[0.5, 0.5], [0, 1], [1, 0], [0.25, 0.75]])
    f32 = predict_proba(linear(2, 2, dtype=np.float32), np.eye(2, dtype=np.float32), np.ones((3, 2), np.float32))
    assert f32.dtype == np.float32


def test_confusion_matrix_counts_and_agrees_with_accuracy(trained: tuple) -> None:
    model, params, iris = trained
    cm = confusion_matrix(model, params, iris.x_test, iris.y_test)
    assert cm.shape == (3, 3) and cm.dtype == np.int64 and cm.sum() == len(iris.y_test)
    assert np.array_equal(cm.sum(axis=1), np.bincount(iris.y_test, minlength=3))  # rows: the true classes
    predicted = predict(model, params, iris.x_test).argmax(axis=1)
    assert np.array_equal(cm.sum(axis=0), np.bincount(predicted, minlength=3))  # columns: the predicted ones
    assert cm.trace() / cm.sum() == pytest.approx(accuracy(model, params, iris.x_test, iris.y_test))
    one_hot = np.eye(3)[iris.y_test]
    assert np.array_equal(confusion_matrix(model, params, iris.x_test, one_hot), cm)
    assert confusion_matrix(model, params, iris.x_test, iris.y_test, n_classes=5).shape == (5, 5)


def test_confusion_matrix_by_hand() -> None:
    xs = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [5.0, 1.0]])
    cm = confusion_matrix(linear(2, 2), np.eye(2), xs, np.array([0, 1, 0, 1]))
    assert cm.tolist() == [[1, 1], [1, 1]]
    binary = confusion_matrix(linear(1, 1), np.ones((1, 1)), np.array([[1.0], [-1.0], [2.0]]), np.array([1, 0, 0]))
    assert binary.tolist() == [[1, 1], [0, 1]]


def test_clear_errors() -> None:
    model, p, xs = linear(2, 3), np.eye(2, 3), np.ones((4, 2))
    with pytest.raises(StructureError, match=r"^confusion_matrix: labels must lie in \[0, 3\) \(n_classes=3\), got 3$"):
        confusion_matrix(model, p, xs, np.array([0, 1, 2, 3]))
    with pytest.raises(ArgumentError, match=r"^confusion_matrix: labels must be one label per row of xs \(4\)"):
        confusion_matrix(model, p, xs, np.array([0, 1]))
    with pytest.raises(ArgumentError, match=r"^confusion_matrix: n_classes must be an int >= 1, got 0$"):
        confusion_matrix(model, p, xs, np.zeros(4, int), n_classes=0)
    with pytest.raises(ArgumentError, match=r"^confusion_matrix: labels must be an array of labels, one per row"):
        confusion_matrix(model, p, xs, "cats")
    with pytest.raises(NonFiniteError, match=r"^predict_proba: the model's output: non-finite value at <root>$"):
        predict_proba(model, np.full((2, 3), np.nan), xs)


def test_accuracy_refuses_non_finite_outputs_as_confusion_matrix_does() -> None:
    # a row of NaN scores was read as class 0 (numpy's argmax of NaN): 1.0 here, where the counts were refused
    model, xs, labels = linear(2, 2), np.array([[np.nan, 0.0], [0.0, 1.0]]), np.array([0, 1])
    with pytest.raises(NonFiniteError, match=r"^accuracy: the model's output: non-finite value at <root>$"):
        accuracy(model, np.eye(2), xs, labels)
    with pytest.raises(NonFiniteError, match=r"^confusion_matrix: the model's output: non-finite value at <root>$"):
        confusion_matrix(model, np.eye(2), xs, labels)
