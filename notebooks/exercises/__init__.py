"""Checks for the exercises at the end of each notebook.

Every notebook ends with two or three exercises. A code cell states the task, holds a
placeholder (``...``) where the answer goes, and calls a check from the module named after
the notebook (``exercises/ex01_prelenses.py`` for ``01_prelenses.ipynb``)::

    import exercises.ex01_prelenses as check

    scale = ...  # your lens here
    check.scale(scale)

A check prints one line: ``✓`` when the answer is right, ``✗`` and the reason when it is not,
or a reminder when the placeholder is still there. It never raises, so a notebook runs from top
to bottom whatever state its exercises are in.

The solutions live in ``solutions/`` (the same module names), out of the students' sight.
``tests/test_exercises.py`` runs every check on its solution (it must pass), on a plausible
mistake listed beside the solution (it must fail) and on the placeholder (it must say
"not answered yet").
"""
