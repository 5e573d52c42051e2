"""tessel: JAX's execution model (arrays, jit, grad, vmap) on tessel's C++ runtime.

    import tessel
    import tessel.numpy as tnp
    f = tessel.jit(lambda x: tnp.sin(x) * 2.0)
    f(tnp.arange(4.0))
"""

from ._tessel import Array, ConcretizationTypeError, DTypeError, ResourceExhaustedError, ShapeError, TesselError
from . import _array  # noqa: F401  (installs Array's Python-level methods)
from . import fft, lax, nn, numpy, random, tree_util
from ._api import (Compiled, Lowered, block_until_ready, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jit,
                   jvp, linearize, make_jaxpr, make_program, value_and_grad, vjp, vmap)
from .lax import stop_gradient
from ._control_flow import checkpoint, remat
from . import debug, host
from .host import ShapeDtypeStruct, io_callback, pure_callback

__version__ = "0.1.0"

__all__ = ["Array", "jit", "grad", "value_and_grad", "jvp", "vjp", "linearize", "vmap", "custom_jvp", "custom_vjp",
           "make_program", "make_jaxpr", "block_until_ready", "stop_gradient", "fft", "checkpoint", "remat", "jacfwd", "jacrev", "hessian", "numpy", "lax", "nn", "random",
           "tree_util", "Lowered", "Compiled", "TesselError", "ShapeError", "DTypeError", "ConcretizationTypeError",
           "ResourceExhaustedError"]
__all__ += ["host", "debug", "pure_callback", "io_callback", "ShapeDtypeStruct"]
from . import colocated  # noqa: E402
__all__ += ["colocated"]
from . import pipeline  # noqa: E402
__all__ += ["pipeline"]

from . import comm, distributed, sharding  # noqa: E402
from ._partitioning import custom_partitioning  # noqa: E402
from .sharding import (device_count, device_put, devices, local_device_count, local_devices, make_mesh,  # noqa: E402
                       process_count, process_index, shard_map)
from .lax import with_sharding_constraint  # noqa: E402

__all__ += ["comm", "distributed", "sharding", "custom_partitioning", "device_put", "devices",
            "local_devices", "device_count", "local_device_count", "process_index", "process_count", "make_mesh",
            "shard_map", "with_sharding_constraint"]
from ._interop import from_dlpack  # noqa: E402

__all__ += ["from_dlpack"]
from . import scipy  # noqa: E402

__all__ += ["scipy"]
