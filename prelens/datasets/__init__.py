"""Small datasets shipped with prelens: no network access at run time.

* :func:`load_iris`: Fisher's Iris data (CSV in ``prelens/datasets/data``),
  split train/test by species with a seed.
* :data:`TOY_XS`, :data:`TOY_YS`: the four-point toy set of the Haskell ``Main.hs`` (from micrograd).
* :func:`make_moons`, :func:`make_spirals`: seeded 2-D problems for pictures.
* :func:`make_glyphs`: seeded, noisy 8×8 images of the ten digits (a small image set).
* :func:`load_dataset`: any of ``iris``, ``moons``, ``spirals``, ``glyphs`` by name, as a
  :class:`Split`; :func:`stratified_split`, :func:`stratified_folds` and
  :func:`standardize` helpers.
* :func:`load_mnist1d`: MNIST-1D (Greydanus & Kobak), 4,000 + 1,000 series of length 40, generated
  once by the ``mnist1d`` package (the ``mnist1d`` extra) and cached under :func:`cache_dir`.
* :mod:`prelens.datasets.sequences`: sequence tasks and texts for the
  transformer.

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
