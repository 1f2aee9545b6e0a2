"""Crafting model files by hand: what a damaged or hostile file holds (for the model-file tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prelens.io import save_checkpoint

#: What the model header of a well-formed file says, key by key.
GOOD_HEADER = {"format": "prelens-model", "version": 1, "prelens": "0.2.0"}


def craft(
    path: str | Path,
    description: Any = None,
    params: Any = (),
    *,
    text: str | None = None,
    header: dict[str, Any] | None = None,
    metadata: Any = None,
) -> str:
    """Write a model file whose lens description is ``description`` (as JSON) or the raw ``text``.

    ``header`` replaces keys of the model header (``format``, ``version``, ``prelens``,
    ``lens``); ``metadata`` is the user's metadata as stored.
    """
    model: dict[str, Any] = {**GOOD_HEADER, "lens": text if text is not None else json.dumps(description)}
    model.update(header or {})
    save_checkpoint(path, params, metadata={"prelens-model": model, "metadata": {} if metadata is None else metadata})
    return str(path)
