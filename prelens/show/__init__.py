"""``prelens.show``: a lens read for people: the stage-by-stage summary and the two-pass diagram."""

from prelens.show._diagram import draw
from prelens.show._summary import Stage, Summary, summary

__all__ = ["Stage", "Summary", "draw", "summary"]
