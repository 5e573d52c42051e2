"""tessel.scipy (jax.scipy): linalg, special and stats over tessel's C++ functions."""

from . import linalg, special, stats  # noqa: F401

__all__ = ["linalg", "special", "stats"]
