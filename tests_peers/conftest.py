"""Two JAX host devices for the data-parallel tests: set before anything imports JAX.

``--xla_force_host_platform_device_count=2`` splits this CPU into two XLA
devices, so a :class:`jax.sharding.Mesh` of two devices runs here as it would
on two accelerators (every other test uses the first device).
"""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()

# 64-bit mode from the start, so that every test sees the same JAX whatever ran before it
# (prelens.to_backend turns it on when float64 arrays move to JAX; int64 ids alone would not).
import jax

jax.config.update("jax_enable_x64", True)
