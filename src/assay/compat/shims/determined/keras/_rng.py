"""The random state a ``TFKerasTrial`` checkpoint keeps (``rng_state.pkl``): Python's, numpy's
and TensorFlow's global generator, under Determined's keys."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import tensorflow as tf


def get_rng_state() -> dict[str, Any]:
    generator = tf.random.get_global_generator()
    return {
        "np_rng_state": np.random.get_state(),
        "random_rng_state": random.getstate(),
        "tf2_rng_global_algorithm": generator.algorithm,
        "tf2_rng_global_state": generator.state.numpy(),
    }


def set_rng_state(rng_state: dict[str, Any]) -> None:
    np.random.set_state(rng_state["np_rng_state"])
    random.setstate(rng_state["random_rng_state"])
    if "tf_rng_global_seed" in rng_state:
        # A TF1 graph-mode checkpoint kept only its global seed.
        tf.random.set_seed(int(rng_state["tf_rng_global_seed"]))
    algorithm = rng_state.get("tf2_rng_global_algorithm")
    state = rng_state.get("tf2_rng_global_state")
    if algorithm is not None and state is not None:
        tf.random.set_global_generator(tf.random.Generator.from_state(state, algorithm))
