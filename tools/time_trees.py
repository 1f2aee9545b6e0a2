"""Time ``tree_map`` and ``tree_add`` of this checkout's ``prelens.core._tree`` against another checkout's.

Usage::

    python tools/time_trees.py /work/main [--rounds 21] [--calls 200]

The other checkout's ``prelens/core/_tree.py`` is loaded from its file beside this one (its imports of
``prelens.errors`` and ``prelens.backend`` resolve to this checkout's, which it shares). Rounds alternate
the order; the script prints the median time per call over the rounds. Run it on a quiet machine
(under load the times are only indicative).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prelens.core import _tree as this  # noqa: E402


def load(checkout: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("other_tree", Path(checkout) / "prelens" / "core" / "_tree.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    other = load(args.other)
    tree: Any = [(np.ones(3), [np.ones(2), 1.0]) for _ in range(50)] + [tuple(np.ones(1) for _ in range(40))]
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for name, mod in [("this", this), ("other", other)][:: 1 if r % 2 else -1]:
            for op, run in (
                ("tree_map", lambda: mod.tree_map(lambda x: -x, tree)),
                ("tree_add", lambda: mod.tree_add(tree, tree)),
            ):
                start = time.perf_counter()
                for _ in range(args.calls):
                    run()
                times.setdefault((op, name), []).append((time.perf_counter() - start) / args.calls)
    for op in ("tree_map", "tree_add"):
        a, b = (statistics.median(times[op, n]) for n in ("this", "other"))
        print(f"{op}: this {a * 1e6:8.1f} us  other {b * 1e6:8.1f} us  this/other {a / b:.2f}")


if __name__ == "__main__":
    main()
