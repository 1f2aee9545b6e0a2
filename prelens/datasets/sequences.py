"""Synthetic sequence tasks and a small shipped text, for training transformers.

Sequence tasks (seeded): ``[BOS] x1 .. xn [SEP] y1 .. yn``, ``n`` random symbols and the answer; a
language model predicts the next token at every position and only the answer counts (the rest is
labelled ``-1``). Text: a shipped public-domain text, its characters as ids, random training windows.

>>> task = SequenceTask("reverse", length=3, n_symbols=5)
>>> inputs, labels = make_sequences(task, 1, rng=0)
>>> task.vocab_size, inputs.shape
(7, (1, 7))
>>> x = inputs[0, 1:4]
>>> bool(inputs[0, 0] == task.bos and inputs[0, 4] == task.sep)
True
>>> labels[0].tolist()[:4], bool((labels[0, 4:] == x[::-1]).all())
([-1, -1, -1, -1], True)
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.core import _args

__all__ = ["TASKS", "TEXTS", "CharVocab", "SequenceTask", "load_text", "make_sequences", "text_windows"]

#: The sequence tasks: name -> what the answer is.
TASKS: dict[str, str] = {
    "copy": "the prompt repeated",
    "reverse": "the prompt backwards",
    "sort": "the prompt's symbols in ascending order",
}

#: The shipped texts: name -> provenance.
TEXTS: dict[str, str] = {
    "sonnets": (
        "William Shakespeare, Sonnets 18, 29, 30, 55, 60, 73, 116 and 130 (first printed 1609; public "
        "domain), typed from memory in the modernised spelling of common editions"
    ),
}

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SequenceTask:
    """A sequence task: its name, the prompt ``length`` and the number of symbols (ids ``0 ..
    n_symbols-1``, then ``bos`` and ``sep``); the answer is predicted at ``answer_start .. seq_len-1``.

    >>> task = SequenceTask("copy", length=3, n_symbols=5)
    >>> task.bos, task.sep, task.vocab_size, task.seq_len, task.answer_start
    (5, 6, 7, 7, 4)
    """

    name: str
    length: int = 8
    n_symbols: int = 10

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or self.name not in TASKS:
            raise E.not_one_of("SequenceTask", "task", sorted(TASKS), self.name)
        for what in ("length", "n_symbols"):
            object.__setattr__(self, what, _size("SequenceTask", what, getattr(self, what)))

    @property
    def bos(self) -> int:
        """The id that begins every sequence."""
        return self.n_symbols

    @property
    def sep(self) -> int:
        """The id between the prompt and the answer."""
        return self.n_symbols + 1

    @property
    def vocab_size(self) -> int:
        """Symbols, ``bos`` and ``sep``."""
        return self.n_symbols + 2

    @property
    def seq_len(self) -> int:
        """The model's input length: ``[BOS] x1..xn [SEP] y1..y(n-1)``."""
        return 2 * self.length + 1

    @property
    def answer_start(self) -> int:
        """The first position whose next-token target is part of the answer (where ``SEP`` is read)."""
        return self.length + 1

    def answer(self, x: IntArray) -> IntArray:
        """The answers to prompts ``x (n, length)``.

        >>> SequenceTask("sort", 3).answer(np.array([[2, 0, 1]])).tolist()
        [[0, 1, 2]]
        """
        x = self._prompts("SequenceTask.answer", x)
        if self.name == "copy":
            return x.copy()
        if self.name == "reverse":
            return x[:, ::-1].copy()
        return np.sort(x, axis=1)

    def _prompts(self, fn: str, prompts: Any) -> IntArray:
        """``prompts`` checked: symbol ids ``(n, length)`` in ``[0, n_symbols)``."""
        x: IntArray = _args.int_array(fn, "prompts", prompts, ndim=2)
        if x.shape[1] != self.length:
            expected = f"i64[n,{self.length}] (n prompts of length {self.length})"
            raise E.lens_shape_error(fn, "prompts", expected, E.describe(x))
        if x.size and (x.min() < 0 or x.max() >= self.n_symbols):
            bad = x[(x < 0) | (x >= self.n_symbols)][0]
            raise E.out_of_range(fn, "prompt symbols", f"[0, {self.n_symbols})", bad)
        return x

    def prompts(self, x: IntArray) -> IntArray:
        """``[BOS] x [SEP]`` for prompts ``x (n, length)``: what generation starts from."""
        x = self._prompts("SequenceTask.prompts", x)
        n = x.shape[0]
        return np.concatenate([np.full((n, 1), self.bos), x, np.full((n, 1), self.sep)], axis=1).astype(np.int64)


def _size(fn: str, what: str, value: Any) -> int:
    """``value`` as an int if it is a positive one (Python's or numpy's), else an error naming ``fn``."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise E.not_positive_int(fn, what, value)
    return int(value)


def make_sequences(
    task: SequenceTask | str, n: int, *, rng: np.random.Generator | int | None = None
) -> tuple[IntArray, IntArray]:
    """``n`` random examples of ``task``: ``(inputs, labels)``, each ``(n, task.seq_len)`` int64.

    ``labels[:, t]`` is token ``t + 1`` where it belongs to the answer, ``-1`` elsewhere; a task given by
    name has the default length and symbols.

    >>> inputs, labels = make_sequences("copy", 4, rng=1)
    >>> inputs.shape, int((labels >= 0).sum(axis=1)[0])
    ((4, 17), 8)
    """
    if not isinstance(task, (SequenceTask, str)):
        raise E.must_be("make_sequences", "task", "a SequenceTask or a task name", E.describe(task))
    t = task if isinstance(task, SequenceTask) else SequenceTask(task)
    n = _size("make_sequences", "n", n)
    gen = _args.seed("make_sequences", rng)
    x = gen.integers(0, t.n_symbols, (n, t.length))
    full = np.concatenate([t.prompts(x), t.answer(x)], axis=1)
    inputs = full[:, :-1].copy()
    labels = full[:, 1:].copy()
    labels[:, : t.answer_start] = -1  # the prompt and the separator do not count
    return inputs, labels


# ---------------------------------------------------------------------- text


def load_text(name: str = "sonnets") -> str:
    """A shipped public-domain text by name (see :data:`TEXTS`).

    >>> load_text()[:34]
    "Shall I compare thee to a summer's"
    """
    if not isinstance(name, str) or name not in TEXTS:
        raise E.not_one_of("load_text", "text", sorted(TEXTS), name)
    return resources.files("prelens.datasets").joinpath("data", f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class CharVocab:
    """Characters <-> ids, ids in sorted character order.

    >>> v = CharVocab.from_text("hello")
    >>> v.size, v.encode("hole").tolist(), v.decode([3, 0])
    (4, [1, 3, 2, 0], 'oe')
    """

    chars: str

    def __post_init__(self) -> None:
        _args.name("CharVocab", "chars", self.chars)
        if len(set(self.chars)) != len(self.chars):
            raise E.bad_argument("CharVocab", "chars", self.chars, "distinct characters (one id each)")

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        """The vocabulary of the characters that occur in ``text``."""
        return cls("".join(sorted(set(_args.name("CharVocab.from_text", "text", text)))))

    @property
    def size(self) -> int:
        """The number of characters."""
        return len(self.chars)

    def encode(self, text: str) -> IntArray:
        """Ids of the characters of ``text`` (every one must be in the vocabulary)."""
        _args.name("CharVocab.encode", "text", text)
        index = {c: i for i, c in enumerate(self.chars)}
        try:
            return np.array([index[c] for c in text], dtype=np.int64)
        except KeyError as exc:
            raise E.StructureError(f"CharVocab.encode: character {exc.args[0]!r} is not in the vocabulary") from exc

    def decode(self, ids: Any) -> str:
        """The text of a sequence of ids (integers in ``[0, size)``; floats are an error, never truncated)."""
        flat = _args.int_array("CharVocab.decode", "ids", ids).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= self.size):
            bad = flat[(flat < 0) | (flat >= self.size)][0]
            raise E.out_of_range("CharVocab.decode", "ids", f"[0, {self.size})", bad)
        return "".join(self.chars[i] for i in flat.tolist())


def text_windows(
    ids: IntArray, block: int, n: int, *, rng: np.random.Generator | int | None = None
) -> tuple[IntArray, IntArray]:
    """``n`` random windows of a token stream: ``inputs = ids[i:i+block]``, ``labels = ids[i+1:i+block+1]``.

    ``ids (N,)`` with ``N > block``; ``inputs`` and ``labels`` are ``(n, block)`` int64.

    >>> x, y = text_windows(np.arange(10), 4, 2, rng=0)
    >>> x.shape, bool((y == x + 1).all())
    ((2, 4), True)
    """
    ids = _args.int_array("text_windows", "ids", ids, ndim=1)  # float ids are an error, never truncated
    if not isinstance(block, (int, np.integer)) or isinstance(block, bool):
        raise E.int_below("text_windows", "block", block, 1)
    if block < 1 or len(ids) < block + 1:
        raise E.StructureError(
            f"text_windows: need block >= 1 and at least block+1 tokens, got block={block}, {len(ids)} tokens"
        )
    n = _args.count("text_windows", "n", n)
    gen = _args.seed("text_windows", rng)
    starts = gen.integers(0, len(ids) - block, n)
    offsets = starts[:, None] + np.arange(block)
    return ids[offsets], ids[offsets + 1]
