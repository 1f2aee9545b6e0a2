"""Continue a prompt with a saved language model.

MODEL is a model file of a language model whose metadata carries its
vocabulary (prelens train transformer --save writes it):

* a character model (--task text): --prompt is text, every character of it in
  the model's vocabulary; the output is the prompt and --steps more characters,
  sampled at --temperature (0 is greedy) with --seed;
* a sequence-task model (copy, reverse, sort): --prompt is the task's symbols,
  separated by spaces or commas (as many as the task's length, each below its
  number of symbols); the output is the model's answer, written greedily.

Examples:
  prelens generate sonnets.prelens --prompt "Shall I compare thee" --steps 200
  prelens generate reverse.prelens --prompt "3 1 4 1 5 9 2 6"
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import numpy.typing as npt

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.datasets.sequences import CharVocab, SequenceTask
from prelens.nn import generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``prelens generate``."""
    parser.add_argument("model", metavar="MODEL", help="a language model file (prelens train transformer --save)")
    parser.add_argument("--prompt", required=True, help="the text (or the task's symbols) to continue")
    parser.add_argument(
        "--steps", type=int, default=None, help="tokens to generate (default: 200 characters, or the task's length)"
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature, 0 for greedy (default: 0.5 for text, 0 for a sequence task)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the sampling")


def run(args: argparse.Namespace) -> int:
    """Generate and print; 0 on success, 2 for a mistake in the arguments or the files."""
    try:
        C.readable_file("MODEL", args.model)
        C.at_least("prelens generate", "--steps", args.steps)
        C.non_negative_real("prelens generate", "--temperature", args.temperature)
        C.at_least("prelens generate", "--seed", args.seed, 0)
        model = C.load(args.model)
        text = continue_prompt(model, args.prompt, args.steps, args.temperature, args.seed, f"MODEL {args.model!r}")
    except C.MISTAKES as err:
        return C.fail(err, "prelens generate")
    print(text)
    return 0


def vocabulary(model: Any, name: str = "MODEL") -> CharVocab | SequenceTask:
    """The vocabulary a language model file (``name`` in messages) carries in its metadata."""
    vocab, kind = model.metadata.get("vocabulary"), model.metadata.get("kind")
    if kind != "language_model" or not isinstance(vocab, dict):
        what = f"a {kind}, not" if isinstance(kind, str) and kind != "language_model" else "not"
        raise C.UsageError(f"{name}: {what} a language model file with its vocabulary (prelens train transformer)")
    try:
        if "chars" in vocab:
            return CharVocab(vocab["chars"])
        return SequenceTask(vocab["task"], vocab["length"], vocab["symbols"])
    except (KeyError, E.PrelensError) as err:
        raise C.UsageError(f"{name}: the vocabulary in its metadata is damaged ({err})") from None


def continue_prompt(
    model: Any, prompt: str, steps: int | None, temperature: float | None, seed: int, name: str = "MODEL"
) -> str:
    """What ``prelens generate`` prints (the same as :func:`prelens.nn.generate` on the same model and prompt)."""
    vocab = vocabulary(model, name)
    if isinstance(vocab, CharVocab):
        prompts, steps, default_t = encode_text(vocab, prompt)[None], steps or 200, 0.5
    else:
        prompts, steps, default_t = vocab.prompts(task_symbols(vocab, prompt)[None]), steps or vocab.length, 0.0
    n = model.metadata.get("context")  # the longest sequence the model reads
    temperature = default_t if temperature is None else temperature
    max_len = n if type(n) is int and n >= 1 else None
    out = generate(model.lens, model.params, prompts, steps, max_len=max_len, temperature=temperature, rng=seed)
    if isinstance(vocab, CharVocab):
        return vocab.decode(out[0])
    answer = out[0, prompts.shape[1] :]
    return " ".join(str(int(a)) if a < vocab.n_symbols else ("[BOS]" if a == vocab.bos else "[SEP]") for a in answer)


def encode_text(vocab: CharVocab, prompt: str) -> npt.NDArray[np.int64]:
    """The ids of ``prompt``; a character outside the vocabulary is named, with the vocabulary."""
    if not prompt:
        raise C.UsageError("--prompt must not be empty")
    unknown = sorted({c for c in prompt if c not in vocab.chars})
    if unknown:
        raise C.UsageError(f"--prompt: {', '.join(map(repr, unknown))} not in the model's vocabulary {vocab.chars!r}")
    return vocab.encode(prompt)


def task_symbols(task: SequenceTask, prompt: str) -> npt.NDArray[np.int64]:
    """The symbols of a sequence-task prompt: ``task.length`` ints in ``[0, task.n_symbols)``."""
    try:
        symbols = [int(p) for p in prompt.replace(",", " ").split()]
    except ValueError:
        symbols = []  # refused below: a task's length is at least 1
    if len(symbols) != task.length or any(not 0 <= s < task.n_symbols for s in symbols):
        what = f"the {task.name} task's prompt, {task.length} symbols from 0 to {task.n_symbols - 1}"
        raise C.UsageError(f"--prompt must be {what}, separated by spaces; got {prompt!r}")
    return np.array(symbols, dtype=np.int64)
