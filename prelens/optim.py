"""Moved to :mod:`prelens.learn` (temporary re-export during the redesign)."""

from prelens.learn._objects import *  # noqa: F403
from prelens.learn._objects import __all__  # noqa: F401
