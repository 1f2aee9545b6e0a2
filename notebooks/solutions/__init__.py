"""Solutions to the notebooks' exercises, one module per notebook (``ex01_prelenses.py`` for ``01_prelenses``).

For the lecturer. Each module defines every answer under the name its check takes, and
``MISTAKES``: one plausible wrong answer per exercise, which the check must reject
(``tests/test_exercises.py`` runs both).
"""
