"""Write the model files and checkpoints of tests/test_compat_0_3_2.py, with whichever prelens is imported.

The committed files were made by prelens 0.3.2::

    PYTHONPATH=/path/to/prelens-0.3.2 python tests/data/v0_3_2/make.py tests/data/v0_3_2

Run against a newer tree (its own names are tried first, then 0.3.2's) it writes the same
files in that tree's format: ``python tests/data/v0_3_2/make.py /tmp/out``. Besides each file
it writes what 0.3.2 computed from it (``*.expected.npz``: inputs, outputs, parameters) and
``expected.json`` (each lens's repr, the metadata, the named tuples' names and fields).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

import numpy as np

import prelens
from prelens import nn
from prelens.train import fit

try:  # 0.4
    from prelens.io import load_checkpoint, save_checkpoint
except ImportError:  # 0.3.2
    from prelens.checkpoint import load as load_checkpoint
    from prelens.checkpoint import save as save_checkpoint
try:  # 0.4
    from prelens.faithful import init_mlp, make_mlp
except ImportError:  # 0.3.2
    from prelens.nn import init_mlp, make_mlp

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # a newer tree warns on 0.3.2's names
    from prelens.optim import adam  # 0.3.2's object optimiser (its state: prelens.optim.AdamState)


def leaves(tree: Any) -> list[Any]:
    """The leaves of a tree of tuples, lists, named tuples and dicts, in order."""
    if isinstance(tree, dict):
        return [x for k in tree for x in leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in leaves(v)]
    return [] if tree is None else [tree]


def named_tuples(tree: Any) -> list[str]:
    """``Name(field,field)`` for every named tuple in a tree, in order."""
    if isinstance(tree, dict):
        return [x for k in tree for x in named_tuples(tree[k])]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return [f"{type(tree).__name__}({','.join(tree._fields)})", *[x for v in tree for x in named_tuples(v)]]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in named_tuples(v)]
    return []


def expected_arrays(path: str, params: Any, **arrays: Any) -> None:
    """``leaf0, leaf1, ...`` (the parameters' leaves) and each given tree's (``x0, x1, ...``), in a plain .npz."""
    out = {f"leaf{i}": np.asarray(v) for i, v in enumerate(leaves(params))}
    for name, tree in arrays.items():
        out.update({f"{name}{i}": np.asarray(v) for i, v in enumerate(leaves(tree))})
    np.savez(path, **out)


def main(out: str) -> None:
    warnings.simplefilter("ignore", DeprecationWarning)  # a newer tree warns on 0.3.2's names
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20240323)
    expected: dict[str, Any] = {"prelens": prelens.__version__}

    def model(name: str, lens: Any, params: Any, x: Any, metadata: dict[str, Any]) -> None:
        path = os.path.join(out, f"{name}.prelens")
        prelens.save_model(path, lens, params, metadata=metadata)
        y = prelens.forward(lens, params, x)
        expected_arrays(os.path.join(out, f"{name}.expected.npz"), params, x=x, y=y)
        expected[name] = {"repr": repr(lens), "metadata": metadata, "named_tuples": named_tuples(params)}

    # a fast MLP
    net = nn.mlp(4, [8, 3], "relu")
    model("mlp", net, net.init(0), rng.standard_normal((5, 4)), {"classes": ["a", "b", "c"]})

    # a decoder-only language model
    lm = nn.decoder_lm(11, 8, 2, 16, 2, 6)
    model("decoder_lm", lm, lm.init(1), rng.integers(0, 11, (2, 6)), {"vocabulary": {"chars": "abcdefghijk"}})

    # the post's network (a TriLens; its parameters are Para named tuples)
    faithful = make_mlp(3, [4, 2])
    model("make_mlp", faithful, init_mlp(3, [4, 2], np.random.default_rng(2)), [0.5, -1.0, 2.0], {})

    # a composite: chain, >> and @ of several lenses
    mean, scale = rng.standard_normal(4), rng.uniform(0.5, 2.0, 4)
    left = prelens.chain(nn.normalize(mean, scale), nn.mlp(4, [6], "tanh"), nn.dense(6, 3, "relu"))
    composite = (left >> nn.dense(3, 2)) @ nn.linear(2, 2)
    xs = (rng.standard_normal((3, 4)), rng.standard_normal((3, 2)))
    model("composite", composite, composite.init(3), xs, {"note": "chain, >> and @"})

    # a checkpoint holding Adam's state (after three steps on fixed gradients)
    params = net.init(4)
    opt = adam(0.01)
    state = opt.init(params)
    for step in range(3):
        grads = [type(p)(*(np.full_like(a, 0.1 * (step + 1)) for a in p)) for p in params]
        params, state = opt.update(grads, state, params)
    tree = {"params": params, "opt_state": state, "step": 3}
    save_checkpoint(os.path.join(out, "adam.npz"), tree, metadata={"optimizer": "adam", "lr": 0.01})
    expected_arrays(os.path.join(out, "adam.expected.npz"), tree)
    expected["adam"] = {"named_tuples": named_tuples(tree), "metadata": {"optimizer": "adam", "lr": 0.01}}

    # fit's resume file: two epochs of four, checkpointed every epoch; then resumed to the end
    data = (rng.standard_normal((24, 4)), rng.integers(0, 3, 24))
    clf = nn.mlp(4, [6, 3])
    path = os.path.join(out, "fit.npz")
    fit(
        clf,
        nn.softmax_cross_entropy,
        data,
        2,
        8,
        adam(0.05),
        7,
        progress=False,
        checkpoint_every=1,
        checkpoint_path=path,
    )
    saved = load_checkpoint(path)
    resumed = fit(clf, nn.softmax_cross_entropy, data, 4, 8, adam(0.05), 7, progress=False, resume=path)
    expected_arrays(os.path.join(out, "fit.expected.npz"), saved, x=data[0], y=data[1])
    np.savez(
        os.path.join(out, "fit.resumed.npz"),
        **{f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves(resumed.params))},
    )
    expected["fit"] = {"named_tuples": named_tuples(saved), "repr": repr(clf)}

    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
