"""Small datasets shipped with prelens: no network access at run time.

Iris (shipped as CSV), the micrograd toy set, seeded moons, spirals and digit glyphs, MNIST-1D
(generated once by the ``mnist1d`` extra and cached), and the sequence tasks and texts of
:mod:`prelens.datasets.sequences`; each is listed in docs/api.md.

>>> from prelens.datasets import load_iris
>>> load_iris().class_names
('setosa', 'versicolor', 'virginica')
"""

# One import line per dataset module.
from prelens.datasets._catalog import DATASETS, load_dataset
from prelens.datasets._split import Split, standardize, stratified_folds, stratified_split
from prelens.datasets.glyphs import GLYPHS, make_glyphs
from prelens.datasets.iris import IRIS_CLASSES, IRIS_FEATURES, iris_arrays, load_iris
from prelens.datasets.mnist1d import MNIST1D_VERSION, cache_dir, load_mnist1d
from prelens.datasets.sequences import TASKS, TEXTS, CharVocab, SequenceTask, load_text, make_sequences, text_windows
from prelens.datasets.synthetic import make_moons, make_spirals
from prelens.datasets.toy import TOY_XS, TOY_YS, load_toy

__all__ = [
    "DATASETS",
    "GLYPHS",
    "IRIS_CLASSES",
    "IRIS_FEATURES",
    "MNIST1D_VERSION",
    "TASKS",
    "TEXTS",
    "TOY_XS",
    "TOY_YS",
    "CharVocab",
    "SequenceTask",
    "Split",
    "cache_dir",
    "iris_arrays",
    "load_dataset",
    "load_iris",
    "load_mnist1d",
    "load_text",
    "load_toy",
    "make_glyphs",
    "make_moons",
    "make_sequences",
    "make_spirals",
    "standardize",
    "stratified_folds",
    "stratified_split",
    "text_windows",
]
