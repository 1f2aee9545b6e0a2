"""The version of prelens: one place, read by the package, the model files and pyproject.toml."""

__version__ = "0.4.0"
