// MPI start-up and shut-down, error checking and dtype mapping (see mpi.h), and the
// public ts::distributed entry points.
#include "distributed/mpi.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <vector>

#include "core/config.h"
#include "core/device_impl.h"
#include "core/lifetime.h"
#include "core/log.h"
#include "distributed/controller.h"
#include "distributed/liveness.h"
#include "tessel/distributed.h"
#include "tessel/error.h"

namespace tessel::distributed::mpi {
namespace {

struct State {
  std::mutex mu;
  bool started = false;    // MPI initialized (by us or adopted)
  bool owned = false;      // we initialized it, so we finalize it
  bool joined = false;     // process_index/devices set from MPI_COMM_WORLD
  bool finalized = false;
  int rank = 0, size = 1;
  MPI_Comm world = MPI_COMM_NULL;  // world_comm(); freed by MPI_Finalize
};
State& state() {
  static State s;
  return s;
}

bool mpi_finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

}  // namespace

// Pending device work may still communicate: it finishes before MPI ends.
void flush_and_finalize() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.started || s.finalized) return;
  controller::stop_workers();
  for (auto* d : detail::local_device_impls()) d->stream().synchronize();
  liveness::stop();
  s.finalized = true;
  if (s.owned && !mpi_finalized()) MPI_Finalize();
}

bool joined() { return state().joined; }

namespace {

// An uncaught exception in one process of a job would otherwise leave the others blocked
// in their next collective: report it with the rank and end the whole job.
void abort_job_on_terminate() {
  std::string what = "unknown exception";
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
  } else {
    what = "std::terminate called without an active exception";
  }
  const State& s = state();
  std::fprintf(stderr, "[tessel %d] fatal error on rank %d of %d: %s\n[tessel %d] aborting the MPI job\n", s.rank,
               s.rank, s.size, what.c_str(), s.rank);
  std::fflush(stderr);
  int init = 0;
  MPI_Initialized(&init);
  if (init && !mpi_finalized()) MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// Every collective set-up of the job happens here, where every process takes part.
void join(State& s) {
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &s.world), "MPI_Comm_dup", "distributed::initialize");
  MPI_Comm_set_errhandler(s.world, MPI_ERRORS_RETURN);
  // In a world of one process too: the same documented line, not a bare std::terminate.
  std::set_terminate(abort_job_on_terminate);
  if (s.size > 1) {
    int local = int(detail::local_device_impls().size());
    std::vector<int> counts(size_t(s.size));
    check(MPI_Allgather(&local, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather",
          "distributed::initialize");
    detail::join_job(s.rank, counts);
    liveness::start(MPI_COMM_WORLD, s.rank, s.size);
  }
  s.joined = true;
  TESSEL_DEBUG_LOG("distributed: rank " + std::to_string(s.rank) + " of " + std::to_string(s.size) + ", " +
                   std::to_string(detail::global_device_impls().size()) + " devices in the job");
}

}  // namespace

// The launcher's variables are read here, not through core/config: they say how the process
// was started, they are not settings.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

void ensure_initialized() {
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    if (s.finalized)
      throw Error("MPI was finalized (distributed::shutdown or exit); no communication is possible after it");
    if (s.joined) return;
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      int provided = 0;
      int err = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (err != MPI_SUCCESS) throw Error("distributed::initialize: MPI_Init_thread failed (error " + std::to_string(err) + ")");
      if (provided < MPI_THREAD_MULTIPLE)
        TESSEL_WARN_LOG("MPI provides thread level " + std::to_string(provided) +
                        " < MPI_THREAD_MULTIPLE; communication from several devices of one process may block");
      s.owned = true;
    }
    // Errors come back as codes that check() turns into tessel::Error with the rank.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    s.started = true;
    join(s);
  }
  // At exit, after the devices' pending work (which may communicate) finished.
  static const bool registered = (detail::at_exit(detail::ExitPhase::kProcesses, flush_and_finalize), true);
  (void)registered;
  detail::register_teardown();
}

MPI_Comm world_comm() { return state().world; }
int world_rank() { return state().rank; }
int world_size() { return state().size; }

void check(int err, const char* call, const std::string& op) {
  if (err == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(err, text, &len);
  const State& s = state();
  throw Error(op + ": " + call + " failed on rank " + std::to_string(s.rank) + " of " + std::to_string(s.size) + ": " +
              std::string(text, size_t(len)));
}

MPI_Datatype datatype(DType d) {
  switch (d) {
    case DType::bool_: return MPI_C_BOOL;
    case DType::int8: return MPI_INT8_T;
    case DType::int16: return MPI_INT16_T;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::uint8: return MPI_UINT8_T;
    case DType::uint16: return MPI_UINT16_T;
    case DType::uint32: return MPI_UINT32_T;
    case DType::uint64: return MPI_UINT64_T;
    case DType::float16:
    case DType::bfloat16: return MPI_UINT16_T;
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::complex64: return MPI_C_FLOAT_COMPLEX;
    case DType::complex128: return MPI_C_DOUBLE_COMPLEX;
  }
  throw Error("internal: no MPI datatype for dtype " + std::to_string(int(d)));
}

int64_t max_count() {
  static const int64_t n = config::get_int(config::kMpiMaxCount);  // 1 to INT_MAX
  return n;
}

Block::Block(MPI_Datatype type, int64_t n) : type_(type), count_(int(n)) {
  const int64_t step = max_count();
  if (n <= step) return;
  // q chunks of `step` elements, then the remainder, as one datatype spanning all n.
  const int64_t q = n / step, rem = n % step;
  MPI_Datatype chunk, chunks;
  MPI_Type_contiguous(int(step), type, &chunk);
  MPI_Type_contiguous(int(q), chunk, &chunks);
  if (rem == 0) {
    type_ = chunks;
  } else {
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Datatype tail;
    MPI_Type_contiguous(int(rem), type, &tail);
    int lengths[2] = {1, 1};
    MPI_Aint displs[2] = {0, MPI_Aint(q * step) * extent};
    MPI_Datatype types[2] = {chunks, tail};
    MPI_Type_create_struct(2, lengths, displs, types, &type_);
    MPI_Type_free(&tail);
    MPI_Type_free(&chunks);
  }
  MPI_Type_free(&chunk);
  MPI_Type_commit(&type_);
  count_ = 1;
  derived_ = true;
}

Block::~Block() {
  if (derived_ && !mpi_finalized()) MPI_Type_free(&type_);
}

}  // namespace tessel::distributed::mpi

namespace tessel::distributed {

namespace {
Mode g_mode = Mode::multi_controller;

Mode checked_mode(Mode m, const char* api) {
  if (m == Mode::multi_controller || m == Mode::single_controller) return m;
  throw ValueError(std::string(api) + ": Mode(" + std::to_string(int(m)) +
                   ") is not a mode (an integer cast to Mode?); use Mode::multi_controller or Mode::single_controller");
}
}  // namespace

void initialize(InitOptions options) {
  checked_mode(options.mode, "distributed::initialize");  // also alone, so a bad value shows before mpirun
  int init = 0;
  MPI_Initialized(&init);
  if (!mpi::launched_by_mpirun() && !init) return;  // alone: the embedded default
  if (mpi::joined() && options.mode != g_mode)
    throw ValueError("distributed::initialize: the job was joined as " +
                     std::string(g_mode == Mode::single_controller ? "single_controller" : "multi_controller") +
                     " already; a process joins in one mode");
  mpi::ensure_initialized();
  if (options.mode == Mode::single_controller) {
    g_mode = Mode::single_controller;
    controller::start();  // returns on the driver only
  }
}

Mode mode() { return g_mode; }

std::vector<Device> worker_devices() {
  std::vector<Device> r;
  if (!controller::is_driver()) return r;
  for (const Device& d : devices())
    if (d.process_index() != 0) r.push_back(d);
  return r;
}

bool is_initialized() { return mpi::joined() && mpi::launched_by_mpirun(); }

void shutdown() { mpi::flush_and_finalize(); }

}  // namespace tessel::distributed
