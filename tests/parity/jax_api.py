"""Writes tests/parity/jax_api.txt: JAX's public callables per module, which scripts/api_coverage
compares with tessel's public API (docs/parity.md).

A public callable of module M is a name of dir(M) that does not start with '_', whose value
is callable and is not a class (dtypes, enums, dimension-number NamedTuples and exceptions
are classes). Each line is `<module> <name> <status>`, status one of:
  implemented  tessel has it (scripts/api_coverage fails when it goes missing)
  missing      tessel does not have it yet
  excluded <reason>  it means nothing in C++ (EXCLUDED below says why)
Regenerating keeps the implemented/missing statuses the file holds; `scripts/api_coverage
--update` marks the names tessel now declares as implemented.
"""
import inspect
import os

import jax
import jax.lax.linalg
import jax.nn
import jax.numpy as jnp
import jax.numpy.fft
import jax.numpy.linalg
import jax.random
import jax.scipy.linalg
import jax.scipy.special
import jax.scipy.stats

MODULES = ["jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.scipy.linalg", "jax.lax", "jax.lax.linalg",
           "jax.nn", "jax.random",
           "jax.scipy.special", "jax.scipy.stats"]
# jax.scipy.stats's distributions are modules of functions (jax.scipy.stats.norm.logpdf, ...).
STATS_DISTRIBUTIONS = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
                       "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial",
                       "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t", "truncnorm", "uniform",
                       "vonmises", "wrapcauchy"]
MODULES += [f"jax.scipy.stats.{d}" for d in STATS_DISTRIBUTIONS]

_FILE_IO = "file I/O on NumPy's .npy/.npz/raw files"
_PRINT = "Python print options; tessel prints with Array::to_string and operator<<"
_PYOBJ = "a test on a Python object's type"
_NO_TOKENS = "tessel orders effects with runtime tokens and has no user-visible tokens"
EXCLUDED = {
    "jax.numpy": {
        "load": _FILE_IO, "save": _FILE_IO, "savez": _FILE_IO, "fromfile": _FILE_IO,
        "from_dlpack": "DLPack exchange between Python array libraries",
        "printoptions": _PRINT, "set_printoptions": _PRINT, "get_printoptions": _PRINT,
        "array_repr": _PRINT, "array_str": _PRINT,
        "frompyfunc": "wraps a Python function as a NumPy ufunc object",
        "vectorize": "a Python decorator over vmap; C++ uses tessel::vmap",
        "fromstring": "parses a Python string", "fromiter": "consumes a Python iterator",
        "frombuffer": "the Python buffer protocol; C++ uses Array::from_bytes",
        "iterable": _PYOBJ, "isscalar": _PYOBJ,
    },
    "jax.lax": {
        "ConvGeneralDilatedDimensionNumbers": "a type alias, not a function",
        "DotDimensionNumbers": "a type alias, not a function", "PrecisionLike": "a type alias, not a function",
        "dtype": "converts a Python value's type to a NumPy dtype",
        "platform_dependent": "chooses a Python function per accelerator platform",
        "after_all": "joins JAX's explicit effect tokens; " + _NO_TOKENS,
        "create_token": "makes a JAX effect token; " + _NO_TOKENS,
        "psend": "one half of a ppermute joined to precv by a token; " + _NO_TOKENS + ": use ppermute",
        "precv": "one half of a ppermute joined to psend by a token; " + _NO_TOKENS + ": use ppermute",
        "dce_sink": "marks a jaxpr value used so dead-code elimination keeps it; a tracing aid, not a computation",
        "stage": "lifts a Python value into the current trace; C++ values are Arrays already",
        "shape_as_value": "turns a shape with symbolic (shape-polymorphic) dimensions into an array; "
                          "tessel shapes are static",
        "scaled_dot": "products of block-scaled fp8/fp4 (MX) formats, dtypes tessel does not have",
        "rng_uniform": "XLA's stateful RngUniform (experimental, values defined by the backend); use random::uniform",
    },
    "jax.nn": {"get_scaled_dot_general_config": "builds a Python configuration object for scaled_dot_general",
               "scaled_matmul": "products of block-scaled fp8/fp4 (MX) formats, dtypes tessel does not have",
               "scaled_dot_general": "products of block-scaled fp8/fp4 (MX) formats, dtypes tessel does not have"},
    "jax.random": {
        "key_impl": "names the typed key's PRNG implementation object; tessel has one (threefry, raw keys)",
        "key_dtype": "the dtype of typed keys; tessel keys are raw uint32[2] arrays",
        "clone": "a copy of a typed key for Python's reference semantics; tessel arrays are values",
    },
}


def public_callables(module_name):
    mod = {"jax.numpy": jnp, "jax.numpy.linalg": jnp.linalg, "jax.numpy.fft": jnp.fft,
           "jax.scipy.linalg": jax.scipy.linalg, "jax.lax": jax.lax, "jax.lax.linalg": jax.lax.linalg,
           "jax.nn": jax.nn, "jax.random": jax.random,
           "jax.scipy.special": jax.scipy.special, "jax.scipy.stats": jax.scipy.stats}.get(module_name)
    if mod is None:  # a distribution of jax.scipy.stats
        mod = getattr(jax.scipy.stats, module_name.rsplit(".", 1)[1])
    return sorted(n for n in dir(mod)
                  if not n.startswith("_") and callable(getattr(mod, n)) and not inspect.isclass(getattr(mod, n)))


def read_statuses(path):
    statuses = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) >= 3 and not line.startswith("#") and parts[2] in ("implemented", "missing"):
                statuses[(parts[0], parts[1])] = parts[2]
    return statuses


def write(path):
    old = read_statuses(path)
    lines = [f"# JAX's public callables per module (jax {jax.__version__}), written by tests/parity/generate.py;",
             "# statuses: implemented | missing | excluded <reason>. scripts/api_coverage reads this file",
             "# and `scripts/api_coverage --update` marks what tessel declares as implemented."]
    for m in MODULES:
        for name in public_callables(m):
            reason = EXCLUDED.get(m, {}).get(name)
            status = f"excluded {reason}" if reason else old.get((m, name), "missing")
            lines.append(f"{m} {name} {status}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines) - 3} names")
