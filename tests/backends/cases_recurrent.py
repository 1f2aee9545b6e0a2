"""Backend cases: ``rnn``, ``gru``, ``lstm``, ``bidirectional``, the cells and ``scan`` of a cell."""

from __future__ import annotations

import numpy as np

from prelens import scan
from prelens.nn import bidirectional, gru, lstm, rnn
from prelens.nn.composed import gru_cell, lstm_cell, rnn_cell

from .harness import Case


def _layer(make, **kw):  # type: ignore[no-untyped-def]
    def build(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = make(3, 4, **kw)
        return lens, lens.init(rng), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 4))

    return build


def _bidirectional(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = bidirectional(gru(1, 3))
    return lens, lens.init(rng), rng.standard_normal((2, 6, 1)), rng.standard_normal((2, 6, 6))


def _cell(make, lstm_: bool = False):  # type: ignore[no-untyped-def]
    def build(rng: np.random.Generator):  # type: ignore[no-untyped-def]
        lens = make(3, 4)
        h = rng.standard_normal((2, 4))
        state = (h, rng.standard_normal((2, 4))) if lstm_ else h
        dstate = (rng.standard_normal((2, 4)), rng.standard_normal((2, 4))) if lstm_ else rng.standard_normal((2, 4))
        return lens, lens.init(rng), (state, rng.standard_normal((2, 3))), (dstate, rng.standard_normal((2, 4)))

    return build


def _scan(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    lens = scan(gru_cell(3, 4), axis=1)
    s = (rng.standard_normal((2, 4)), rng.standard_normal((2, 5, 3)))
    return lens, lens.init(rng), s, (rng.standard_normal((2, 4)), rng.standard_normal((2, 5, 4)))


CASES = [
    Case("rnn", _layer(rnn)),
    Case("rnn relu", _layer(rnn, nonlinearity="relu")),
    Case("gru", _layer(gru)),
    Case("lstm", _layer(lstm)),
    Case("bidirectional gru", _bidirectional),
    Case("rnn_cell", _cell(rnn_cell)),
    Case("gru_cell", _cell(gru_cell)),
    Case("lstm_cell", _cell(lstm_cell, lstm_=True)),
    Case("scan(gru_cell)", _scan),
]
