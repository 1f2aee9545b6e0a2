"""``prelens.io``: checkpoints and model files (no pickle, atomic writes)."""

from prelens.io._checkpoint import load, load_metadata, register_namedtuple, save
from prelens.io._model_file import LoadedModel, load_model, save_model

__all__ = ["LoadedModel", "load", "load_metadata", "load_model", "register_namedtuple", "save", "save_model"]
