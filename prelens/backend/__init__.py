"""``prelens.backend``: array namespaces (numpy, array_api_strict, PyTorch, JAX) and moves between them."""

from prelens.backend._arrays import BACKENDS, to_backend, to_numpy

__all__ = ["BACKENDS", "to_backend", "to_numpy"]
