#pragma once
// Interoperation with MPI code: adopt an existing MPI_Comm. Include only where <mpi.h> is
// available (tessel's own headers do not need it).
#include <mpi.h>

#include "tessel/comm.h"

namespace tessel::comm {

/// Wraps `c` (which the program keeps alive and frees) as a tessel communicator.
inline Comm adopt(MPI_Comm c) { return Comm::adopt(&c); }

/// The MPI_Comm of a tessel communicator.
inline MPI_Comm mpi_comm(const Comm& c) { return *static_cast<const MPI_Comm*>(c.handle()); }

}  // namespace tessel::comm
