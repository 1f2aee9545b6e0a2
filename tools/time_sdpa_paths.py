"""Does scaled_dot_product_attention's numpy forward pass pay? It against the array-API one, on numpy arrays.

Usage::

    python tools/time_sdpa_paths.py

For the LM benchmark's attention ``(16, 4, 32, 16)`` and a long sequence ``(4, 4, 512, 16)``, causal, in
float32 and float64: the lens's forward pass (numpy's path: ``_numpy_weights`` and ``_weighted_buffer``) and
the standard's (``_weights``, then ``A @ V``) run on the same numpy arrays. Prints the best of 7 CPU
times (``time.process_time``: it moves less than the wall clock when other programs load the machine)
and the peak bytes under ``tracemalloc`` of one pass each.
"""

from __future__ import annotations

import math
import time
import timeit
import tracemalloc

import numpy as np

from prelens.nn._dot_attention import _scaled_dot_product_attention, _weights


def main() -> None:
    for lead, t in (((16, 4), 32), ((4, 4), 512)):
        for dt in (np.float32, np.float64):
            rng = np.random.default_rng(0)
            q, k, v = (rng.standard_normal((*lead, t, 16)).astype(dt) for _ in range(3))
            fwd = _scaled_dot_product_attention(16, causal=True, copy_input=False).fwd

            def numpy_path() -> object:
                return fwd((), ((q, k), v))[1]

            def standard_path() -> object:
                return _weights(q, k, True, 1 / math.sqrt(16)) @ v

            assert np.allclose(numpy_path(), standard_path(), atol=1e-5)  # type: ignore[call-overload]
            n = 100 if t == 32 else 3
            times, peaks = [], []
            for run in (numpy_path, standard_path):
                times.append(min(timeit.repeat(run, number=n, repeat=7, timer=time.process_time)) / n)
                tracemalloc.start()
                run()
                peaks.append(tracemalloc.get_traced_memory()[1] / 1e6)
                tracemalloc.stop()
            print(
                f"{(*lead, t, 16)} {np.dtype(dt).name}: numpy path {times[0] * 1e6:.0f} us, standard "
                f"{times[1] * 1e6:.0f} us ({times[1] / times[0]:.2f}x); peak {peaks[0]:.1f} MB vs {peaks[1]:.1f} MB"
            )


if __name__ == "__main__":
    main()
