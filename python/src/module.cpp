// The extension module tessel._tessel: the C++ runtime's public API for the Python package
// (python/tessel/). Each part is bound in its own file to keep rebuilds small.
#include "common.h"

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ runtime (use the tessel package, not this module)";
  tessel::python::init_numpy_api();
  tessel::python::bind_errors(m);
  tessel::python::bind_array(m);
  tessel::python::bind_numpy(m);
  tessel::python::bind_transforms(m);
  tessel::python::bind_fft(m);
  tessel::python::bind_host(m);
  tessel::python::bind_colocated(m);
  tessel::python::bind_pipeline(m);
  tessel::python::bind_sharding(m);
  tessel::python::bind_comm(m);
  tessel::python::bind_custom_partitioning(m);
  tessel::python::bind_interop(m);
  tessel::python::bind_jit_key(m);
  tessel::python::bind_linalg(m);
  tessel::python::bind_scipy(m);
}
