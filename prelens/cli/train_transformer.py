"""Train a decoder-only transformer, built entirely from lenses, on a sequence task or a small text.

Sequence tasks (--task copy, reverse, sort): each example is
"[BOS] x1..xn [SEP] y1..yn" with n = --length random symbols, and the loss
counts only the answer y1..yn. After training the command reports, on held-out
sequences, the token accuracy with the true answer fed in (teacher forcing)
and the accuracy of greedy generation from the prompt alone.

--task text: a character-level model of a shipped public-domain text
(Shakespeare's sonnets); it reports the loss before and after training and
samples text.

--save PATH writes a model file (the lens, its vocabulary and the trained
parameters) for "prelens generate", "evaluate" and "summary", or prelens.load_model.

Examples:
  prelens train transformer --task reverse --save reverse.prelens
  prelens train transformer --task sort --epochs 3 --float32
  prelens train transformer --task text --epochs 4 --sample 400
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from prelens import errors as E
from prelens.cli import _checks as C
from prelens.cli._runtime import add_output_arguments, add_runtime_arguments
from prelens.core._trace import forward
from prelens.datasets.sequences import TASKS, TEXTS, CharVocab, SequenceTask, load_text, make_sequences, text_windows
from prelens.io._train_metadata import save_language_model
from prelens.learn import adam, warmup_cosine
from prelens.nn import decoder_lm, generate, token_cross_entropy
from prelens.train import evaluate, fit, retain_freed_memory

__all__ = ["add_arguments", "run", "token_accuracy"]

#: Defaults that differ between the sequence tasks and the text.
_SEQ = {"train_size": 20000, "epochs": 2, "batch_size": 64, "lr": 1e-3}
_TEXT = {"train_size": 4000, "epochs": 4, "batch_size": 32, "lr": 3e-3}
#: The flags of the text only and of the sequence tasks only, with their defaults (given for the other, refused).
_TEXT_ONLY = {"text": "sonnets", "block": 64, "sample": 300, "temperature": 0.5, "prompt": "Shall I compare thee"}
_SEQ_ONLY = {"length": 8, "symbols": 10}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``prelens train transformer``."""
    task = parser.add_argument_group("task")
    task.add_argument(
        "--task",
        choices=[*TASKS, "text"],
        default="reverse",
        help="; ".join(f"{k}: the answer is {v}" for k, v in TASKS.items())
        + "; text: a character-level model of --text",
    )
    _by_task(task, "--length", int, "symbols in each prompt (sequence tasks)")
    _by_task(task, "--symbols", int, "distinct symbols (sequence tasks)")
    _by_task(task, "--text", str, "the shipped text for --task text", choices=sorted(TEXTS))
    _by_task(task, "--block", int, "context length in characters for --task text")
    _by_task(task, "--train-size", int, "training sequences, or random text windows for --task text")
    task.add_argument("--test-size", type=int, default=1000, help="held-out sequences (or text windows) to evaluate on")
    model = parser.add_argument_group("model")
    model.add_argument("--d-model", type=int, default=64, help="width of the token vectors")
    model.add_argument("--heads", type=int, default=4, help="attention heads (must divide --d-model)")
    model.add_argument("--d-ff", type=int, default=256, help="hidden width of the feed-forward layers")
    model.add_argument("--layers", type=int, default=2, help="transformer blocks")
    model.add_argument(
        "--norm", choices=("post", "pre"), default="post", help="layer norm after (the paper) or before each sub-layer"
    )
    model.add_argument(
        "--positional", choices=("learned", "sinusoidal"), default="learned", help="positional embedding"
    )
    model.add_argument("--float32", action="store_true", help="train in float32 instead of float64")
    train = parser.add_argument_group("training (Adam)")
    _by_task(train, "--epochs", int, "passes over the training set")
    _by_task(train, "--batch-size", int, "sequences per step")
    _by_task(
        train, "--lr", float, "Adam's peak step size, reached after a linear warm-up and decayed to 0 along a cosine"
    )
    train.add_argument(
        "--seed", type=int, default=0, help="seeds the data, the initial weights, shuffling and sampling"
    )
    add_runtime_arguments(train)
    out = parser.add_argument_group("output")
    _by_task(out, "--sample", int, "characters to generate (--task text)", metavar="CHARS")
    _by_task(out, "--temperature", float, "sampling temperature (--task text; 0 is greedy)")
    _by_task(out, "--prompt", str, "text to start sampling from (--task text)")
    add_output_arguments(out, "reverse.prelens", "lens, vocabulary, parameters", piped=False)


def _by_task(group: Any, flag: str, type_: type, text: str, **kwargs: Any) -> None:
    """A flag whose default ``run`` sets by the task: it differs (``_SEQ``, ``_TEXT``), or the flag is of one kind of
    task only (``_TEXT_ONLY``, ``_SEQ_ONLY``)."""
    key = flag[2:].replace("-", "_")
    default = f"{_SEQ[key]:g}; text: {_TEXT[key]:g}" if key in _SEQ else {**_TEXT_ONLY, **_SEQ_ONLY}[key]
    group.add_argument(flag, type=type_, default=argparse.SUPPRESS, help=f"{text} (default: {default})", **kwargs)


def token_accuracy(model: Any, params: Any, xs: Any, labels: Any) -> float:
    """The fraction of counted positions (``labels >= 0``) where the logits' argmax is the label."""
    logits = forward(model, params, xs)
    counted = labels >= 0
    return float((logits.argmax(axis=-1)[counted] == labels[counted]).mean())


COMMAND = "prelens train transformer"


def check(args: argparse.Namespace) -> None:
    """Every flag's range, and that ``--save`` can be written, before any work (an ``ArgumentError`` if not).

    The prompt's characters are checked against the text's vocabulary when the text is loaded,
    still before training.
    """
    text = args.task == "text"
    for key in _SEQ_ONLY if text else _TEXT_ONLY:  # given by the user for the other kind of task
        if hasattr(args, key):
            raise E.flag_needs(COMMAND, f"--{key}", "--task copy, reverse or sort" if text else "--task text")
    if text:
        C.at_least(COMMAND, "--block", args.block)
        C.at_least(COMMAND, "--sample", args.sample, 0)
        C.non_negative_real(COMMAND, "--temperature", args.temperature)
    else:
        C.at_least(COMMAND, "--length", args.length)
        C.at_least(COMMAND, "--symbols", args.symbols, 2)
    sizes = ("--train-size", "--test-size", "--d-model", "--heads", "--d-ff", "--layers", "--epochs", "--batch-size")
    C.counts(COMMAND, args, *sizes)
    C.positive_real(COMMAND, "--lr", args.lr)
    C.at_least(COMMAND, "--seed", args.seed, 0)
    C.writable(COMMAND, "--save", args.save)


def run(args: argparse.Namespace) -> int:
    """Train and report.

    0 on success; 1 if training diverged or the parameters could not be saved; 2 for bad arguments
    (found before any training).
    """
    defaults = {**_TEXT, **_TEXT_ONLY} if args.task == "text" else {**_SEQ, **_SEQ_ONLY}
    for k, default in defaults.items():  # the flags whose defaults differ, and the task's own (check refuses others)
        if not hasattr(args, k):
            setattr(args, k, default)
    dtype = np.float32 if args.float32 else np.float64
    try:
        check(args)
        data, model, extra = (_text_setup if args.task == "text" else _task_setup)(args, dtype)
        steps = args.epochs * -(-len(data[0][0]) // args.batch_size)
        warmup = min(100, steps // 10 + 1, steps)
        # without the decay, Adam at a constant step size tends to spike once the loss is near zero
        optimizer = adam(warmup_cosine(args.lr, warmup=warmup, total=steps))
    except E.PrelensError as err:
        return C.fail(err, COMMAND)
    (x_train, y_train), (x_test, y_test) = data
    loss = token_cross_entropy()
    params = model.init(np.random.default_rng(args.seed))
    start_loss = evaluate(model, loss, params, x_test, y_test)
    print(f"model {model!r}")
    print(
        f"{len(x_train)} training sequences of {x_train.shape[1]} tokens, {len(x_test)} held out; "
        f"Adam, peak lr {args.lr:g} (warm-up {warmup} step{'' if warmup == 1 else 's'}, cosine decay to step {steps}), "
        f"batch {args.batch_size}, {args.epochs} epoch{'' if args.epochs == 1 else 's'}; "
        f"held-out loss before training {start_loss:.4f}"
    )
    metrics = {} if args.task == "text" else {"token_accuracy": token_accuracy}
    started = time.perf_counter()
    retain_freed_memory()  # the steps reuse what the last one freed (no page faults)
    try:
        params, _, history = fit(
            model,
            loss,
            (x_train, y_train),
            args.epochs,
            args.batch_size,
            optimizer,
            args.seed,
            params=params,
            validation=(x_test, y_test),
            metrics=metrics,
            progress=not args.no_progress,
            blas_threads=args.blas_threads,
            backend=args.backend,
        )
    except E.PrelensError as err:  # diverged (or refused mid-way): keep the last good parameters
        return C.stopped(err, COMMAND, args.save, lambda params, last: _save(args, model, params, last.steps, extra))
    seconds = time.perf_counter() - started
    saved = _save(args, model, params, history.steps, extra)  # first: a Ctrl-C later loses nothing
    if history.interrupted:
        print(f"interrupted after {history.steps} steps: reporting the parameters so far")
    print(f"trained {history.steps} step{'' if history.steps == 1 else 's'} in {seconds:.1f} s")
    losses = " ".join(f"{x:.4f}" for x in history.loss) or "(no epoch finished)"
    print(f"training loss per epoch: {losses}")
    end_loss = evaluate(model, loss, params, x_test, y_test)
    print(f"held-out loss: {start_loss:.4f} before training, {end_loss:.4f} after")
    if args.task == "text":
        prompt = extra.encode(args.prompt or "\n")  # checked before training
        out = generate(
            model, params, prompt[None], args.sample, max_len=args.block, temperature=args.temperature, rng=args.seed
        )
        print(f"sample (temperature {args.temperature:g}):")
        print(extra.decode(out[0]))
    else:
        _report_task(model, params, extra, x_test, y_test)
    return C.finish(saved, args.save, "prelens generate/evaluate/summary")


def _save(args: argparse.Namespace, model: Any, params: Any, steps: int, vocab: Any) -> bool | None:
    """Write the model file ``--save`` with the vocabulary and the context length (see ``_checks.saved``)."""
    vocabulary: dict[str, Any]
    if isinstance(vocab, CharVocab):
        vocabulary, context = {"chars": vocab.chars}, args.block
    else:
        vocabulary, context = {"task": vocab.name, "length": vocab.length, "symbols": vocab.n_symbols}, vocab.seq_len
    meta = {"model": repr(model), "task": args.task, "steps": steps, "seed": args.seed}
    return C.saved(COMMAND, args.save, lambda: save_language_model(args.save, model, params, vocabulary, context, meta))


def _task_setup(args: argparse.Namespace, dtype: Any) -> tuple[Any, Any, Any]:
    task = SequenceTask(args.task, args.length, args.symbols)
    train = make_sequences(task, args.train_size, rng=args.seed)
    test = make_sequences(task, args.test_size, rng=args.seed + 1)
    return (train, test), _model(args, task.vocab_size, task.seq_len, dtype), task


def _text_setup(args: argparse.Namespace, dtype: Any) -> tuple[Any, Any, Any]:
    text = load_text(args.text)
    vocab = CharVocab.from_text(text)
    vocab.encode(args.prompt or "\n")  # a character the model cannot read: refused now, not after training
    ids = vocab.encode(text)
    cut = int(len(ids) * 0.9)  # the last tenth is held out
    if args.block >= len(ids) - cut:  # a window and its next character must fit in it (and in the rest)
        held_out = f"its held-out last tenth has {len(ids) - cut} characters"
        raise E.bad_argument(
            COMMAND, "--block", args.block, f"at most {len(ids) - cut - 1} for --text {args.text} ({held_out})"
        )
    train = text_windows(ids[:cut], args.block, args.train_size, rng=args.seed)
    test = text_windows(ids[cut:], args.block, args.test_size, rng=args.seed + 1)
    return (train, test), _model(args, vocab.size, args.block, dtype), vocab


def _model(args: argparse.Namespace, vocab: int, max_len: int, dtype: Any) -> Any:
    sizes = (vocab, args.d_model, args.heads, args.d_ff, args.layers, max_len)
    return decoder_lm(*sizes, norm=args.norm, positional=args.positional, dtype=dtype)


def _report_task(model: Any, params: Any, task: SequenceTask, x_test: Any, y_test: Any) -> None:
    acc = token_accuracy(model, params, x_test, y_test)
    prompts = x_test[:, : task.answer_start + 1]
    truth = y_test[:, task.answer_start :]
    answers = generate(model, params, prompts, task.length)[:, task.answer_start + 1 :]
    right = answers == truth
    print(
        f"held-out token accuracy {acc:.2%} (answer fed in); greedy generation from the prompt: "
        f"{right.mean():.2%} of tokens, {right.all(axis=1).mean():.2%} of sequences ({len(x_test)} sequences)"
    )
    for i in range(min(3, len(x_test))):
        x = " ".join(map(str, prompts[i, 1:-1]))
        print(f"  {task.name} {x}  ->  {' '.join(map(str, answers[i]))}   (expected {' '.join(map(str, truth[i]))})")
