"""Time this checkout's training steps against another version of prelens, in one process, interleaved.

Usage::

    git worktree add /tmp/prelens-0.3.2 v0.3.2       # or any checkout of the other version
    python tools/compare_versions.py /tmp/prelens-0.3.2 [--repeats 9] [--threads 1]

The other version's package is copied under the name ``prelens_old`` (its imports are relative,
but for a few absolute ones rewritten here), so both import side by side. For every case of
``prelens bench --peers`` (the MLPs and the language model, float64 and float32) both versions
build their problem from the same seed; the script checks that the weights are equal and the
gradients agree, then times one SGD step of each with ``time_interleaved`` (rounds alternate
the order) and prints the medians and the ratio this/other.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def import_other(checkout: Path):  # type: ignore[no-untyped-def]
    """The other version's benchmark ``peers`` and ``lm``, imported as ``prelens_old.bench``.

    Up to 0.3 the benchmark is ``prelens/bench/``; from 0.4 ``prelens_bench/``, beside the package, is
    copied into ``prelens_old/bench`` (its ``prelens_bench`` imports read as ``prelens.bench``).
    """
    work = Path(tempfile.mkdtemp(prefix="prelens-old-"))
    shutil.copytree(checkout / "prelens", work / "prelens_old")
    if (checkout / "prelens_bench").is_dir():
        shutil.copytree(checkout / "prelens_bench", work / "prelens_old" / "bench")
    for path in (work / "prelens_old").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        new = re.sub(r"\bprelens_bench\b", "prelens.bench", text)
        new = re.sub(r"\bfrom prelens(\.| import)", r"from prelens_old\1", new)
        new = re.sub(r"^(\s*)import prelens$", r"\1import prelens_old as prelens", new, flags=re.M)
        new = re.sub(r"^(\s*)import prelens\.([\w.]+)$", r"\1import prelens_old.\2", new, flags=re.M)
        new = re.sub(r"\bprelens\.(?=[a-z_]+\b)", "prelens_old.", new) if "import prelens_old." in new else new
        if new != text:
            path.write_text(new, encoding="utf-8")
    sys.path.insert(0, str(work))
    import prelens_old.bench.lm as lm
    import prelens_old.bench.peers as peers

    return peers, lm


def leaves(tree):  # type: ignore[no-untyped-def]
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    return [np.asarray(tree)]


def max_rel_diff(a, b) -> float:  # type: ignore[no-untyped-def]
    worst = 0.0
    for x, y in zip(leaves(a), leaves(b), strict=True):
        scale = float(np.max(np.abs(x))) if x.size else 1.0
        worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))) / (scale or 1.0) if x.size else 0.0)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="a checkout of the other version (holding prelens/)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both (0: numpy's default)")
    parser.add_argument("--only", default="", help="only the cases whose label contains this text (say 'LM')")
    args = parser.parse_args()
    if not (args.other / "prelens" / "__init__.py").is_file():
        parser.error(f"{args.other} holds no prelens/ package")
    sys.path.insert(0, str(ROOT))
    old_peers, old_lm = import_other(args.other)
    import prelens_bench.peers as new_peers
    from prelens.train import blas_threads, retain_freed_memory

    retain_freed_memory()  # as `prelens bench` does: neither version pays page faults the other's frees caused
    from prelens_bench._timing import time_interleaved
    from prelens_bench.lm import LMConfig

    threads = args.threads or None
    print(f"{'case':36} {'other ms':>9} {'this ms':>9} {'this/other':>10}  max grad diff")
    ratios = []
    with blas_threads(threads) if threads else _nothing():
        for case in (c for c in new_peers.PEER_CASES if args.only in c.label):
            model = case.model
            if isinstance(model, LMConfig):
                model = old_lm.LMConfig(**dataclasses.asdict(model))
            old_case = old_peers.PeerCase(model, case.dtype, case.batch)
            new_p, old_p = new_peers.make_problem(case), old_peers.make_problem(old_case)
            assert max_rel_diff(new_p.params, old_p.params) == 0.0, f"{case.label}: the weights differ"
            new_s, old_s = new_peers.PRELENS.prepare(new_p), old_peers.PRELENS.prepare(old_p)
            diff = max_rel_diff(new_s.grads(), old_s.grads())
            tol = 1e-12 if case.dtype == "float64" else 1e-5
            assert diff <= tol, f"{case.label}: gradients differ by {diff:.2e}"
            new_s.step(), old_s.step()  # warm
            inner = max(1, round(0.05 / _once(new_s.step)))
            t = time_interleaved({"other": old_s.step, "this": new_s.step}, args.repeats, inner)
            ratio = t["this"][0] / t["other"][0]
            ratios.append(ratio)
            print(f"{case.label:36} {t['other'][0] * 1e3:9.3f} {t['this'][0] * 1e3:9.3f} {ratio:10.3f}  {diff:.1e}")
    print(f"geometric mean this/other: {float(np.exp(np.mean(np.log(ratios)))):.3f}")


def _once(f) -> float:  # type: ignore[no-untyped-def]
    import time

    t0 = time.perf_counter()
    f()
    return max(time.perf_counter() - t0, 1e-6)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
