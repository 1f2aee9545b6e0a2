"""``prelens.nn``: the networks.

Two levels, one algebra. The *faithful* level is the blog's network, one
neuron at a time on 1-D arrays (for teaching and for checking the algebra).
The *fast* level is the same mathematics as whole-array lenses with a leading
batch axis (for training). Every fast lens is proven equal to a faithful twin.
"""

# Each module adds its own import line below.
