"""Moved to :mod:`prelens.show` (temporary re-export during the redesign)."""

from prelens.show._diagram import *  # noqa: F403
