"""Time numpy's causal attention in blocks of rows against the whole passes, in one process, interleaved.

Usage::

    OPENBLAS_NUM_THREADS=1 python tools/time_causal_blocks.py [BATCH T DTYPE]   # default 16 512 float32

Runs ``scaled_dot_product_attention(16, causal=True)``'s forward and backward pass on ``(BATCH, 4, T, 16)``
with ``ROWS = 128`` (the library's blocks) and with ``ROWS`` past ``T`` (the whole passes), checks that the
two agree, and prints the CPU time of each (minimum and median of 7 rounds).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import prelens.nn._dot_attention as D
from prelens.nn import scaled_dot_product_attention
from prelens.train import retain_freed_memory


def main() -> None:
    batch, t = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (16, 512)
    dt = np.dtype(sys.argv[3] if len(sys.argv) > 3 else "float32")
    retain_freed_memory()  # as the benchmarks do: no side pays page faults
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((batch, 4, t, 16)).astype(dt) for _ in range(4))
    lens = scaled_dot_product_attention(16, causal=True)
    rows = {"whole": 10**9, "blocks": D.ROWS}

    def run() -> tuple[np.ndarray, tuple[object, object]]:
        m, out = lens.fwd((), ((q, k), v))
        return out, lens.bwd(m, do)

    outs = {}
    for name, n in rows.items():
        D.ROWS = n
        outs[name] = run()
    print("max |whole - blocks| of the output:", float(np.abs(outs["whole"][0] - outs["blocks"][0]).max()))
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(7):
        for name, n in rows.items():
            D.ROWS = n
            t0 = time.process_time()
            run()
            times[name].append(time.process_time() - t0)
    for name, ts in times.items():
        ts.sort()
        print(f"{name:7s} min {ts[0] * 1e3:7.1f} ms  median {ts[3] * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
