"""Moved to :mod:`prelens.io` (temporary re-export during the redesign)."""

from prelens.io._checkpoint import *  # noqa: F403
from prelens.io._checkpoint import __all__  # noqa: F401
