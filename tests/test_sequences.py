"""The synthetic sequence tasks and the shipped text."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import StructureError
from prelens.datasets import CharVocab, SequenceTask, load_text, make_sequences, text_windows
from prelens.testing import seeds


@given(st.sampled_from(["copy", "reverse", "sort"]), st.integers(1, 6), st.integers(1, 12), seeds())
def test_sequences_have_the_prompt_answer_layout(name, length, n_symbols, seed):
    task = SequenceTask(name, length, n_symbols)
    inputs, labels = make_sequences(task, 5, rng=seed)
    assert inputs.shape == labels.shape == (5, 2 * length + 1)
    assert inputs.dtype == labels.dtype == np.int64
    assert np.all(inputs[:, 0] == task.bos) and np.all(inputs[:, length + 1] == task.sep)
    x = inputs[:, 1 : length + 1]
    y = labels[:, length + 1 :]
    assert x.max() < n_symbols and x.min() >= 0
    expected = {"copy": x, "reverse": x[:, ::-1], "sort": np.sort(x, axis=1)}[name]
    assert np.array_equal(y, expected)
    assert np.all(labels[:, : length + 1] == -1)
    # the model's input is the full sequence shifted: the answer is fed in one step late
    assert np.array_equal(inputs[:, length + 2 :], y[:, :-1])
    assert np.array_equal(task.prompts(x), inputs[:, : length + 2])


def test_sequences_are_seeded():
    a = make_sequences("reverse", 4, rng=7)
    b = make_sequences("reverse", 4, rng=7)
    c = make_sequences("reverse", 4, rng=8)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_bad_task_arguments_are_errors():
    with pytest.raises(StructureError, match="task must be one of"):
        SequenceTask("shuffle")
    with pytest.raises(StructureError, match="length must be a positive int"):
        SequenceTask("copy", 0)
    with pytest.raises(StructureError, match="n must be a positive int"):
        make_sequences("copy", 0)


def test_sizes_may_be_numpy_ints():
    # np.int64(3) was refused as "length must be a positive int, got np.int64(3)"
    task = SequenceTask("copy", np.int64(3), np.int64(5))
    assert (task.seq_len, task.vocab_size) == (7, 7)
    inputs, labels = make_sequences(task, np.int64(2), rng=0)
    assert inputs.shape == labels.shape == (2, 7)


def test_shipped_text_and_character_vocabulary_round_trip():
    text = load_text("sonnets")
    assert text.startswith("Shall I compare thee to a summer's day?")
    assert "I never writ, nor no man ever loved." in text
    assert 4000 < len(text) < 8000
    vocab = CharVocab.from_text(text)
    ids = vocab.encode(text)
    assert vocab.decode(ids) == text and ids.max() == vocab.size - 1
    with pytest.raises(StructureError, match="is not in the vocabulary"):
        vocab.encode("§")
    with pytest.raises(StructureError, match="text must be one of"):
        load_text("hamlet")


def test_text_windows_are_next_character_pairs():
    ids = np.arange(100)
    x, y = text_windows(ids, 8, 50, rng=0)
    assert x.shape == y.shape == (50, 8)
    assert np.array_equal(y, x + 1) and np.all(np.diff(x, axis=1) == 1)
    with pytest.raises(StructureError, match="block"):
        text_windows(ids[:5], 8, 1)
