"""Time prelens.train.step with and without a dropout key (a small dropout MLP): ms per step.

Before the fix step(key=) composed a new keyed step lens every call (about twice the time of a reused one).
Run on a quiet machine: PYTHONPATH=. python tools/time_keyed_step.py
"""

import time

import numpy as np

from prelens import chain
from prelens.learn import adam
from prelens.nn import dense, dropout, mse, relu
from prelens.train import step

model = chain(dense(20, 64, relu), dropout(0.1), dense(64, 1, None))
opt = adam(1e-3)
params = model.init(0)
xs = np.random.default_rng(0).standard_normal((32, 20))
batch = (xs, xs[:, :1])
for keyed in (False, True):
    p, s = params, opt.init(params)
    start = time.perf_counter()
    for i in range(300):
        p, s, _ = step(model, mse, p, batch, opt, s, key=i if keyed else None)
    print(f"key={'int' if keyed else 'None'}: {(time.perf_counter() - start) / 300 * 1e3:.3f} ms/step")
