"""The README's three lines on JAX, in a fresh process: JAX as a user starts it, 64-bit mode off.

Every other test here runs with ``jax_enable_x64`` on (``conftest.py``); a user training a float32
model starts without it, and JAX then holds integer ids as int32. This runs that case.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.test_docs import ROOT, jax_blocks


def test_the_readme_lm_trains_on_jax_in_a_fresh_process() -> None:
    (block,) = [b for b in jax_blocks(ROOT / "README.md") if "decoder_lm" in b]
    check = block + (
        "import jax\n"
        "assert not jax.config.jax_enable_x64, 'the block must not need 64-bit mode'\n"
        "assert history.loss[-1] < history.loss[0] and str(params.unembedding.weight.dtype) == 'float32'\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
