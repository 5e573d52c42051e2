// MPI communication (tessel/comm.h) for tessel.comm, the mpi4jax-compatible module. Every
// function works eagerly and under jit/grad/vmap: the Python layer converts mpi4py
// communicators, operators and statuses; here they are tessel's own. The GIL is released
// while a call may block in MPI.
#include <string>
#include <vector>

#include "common.h"
#include "tessel/comm.h"

namespace tessel::python {
namespace {

using comm::Comm;
using comm::Op;

Op to_op(const std::string& name) {
  static const Op ops[] = {Op::Sum, Op::Prod, Op::Min, Op::Max, Op::LAnd, Op::LOr, Op::BAnd, Op::BOr, Op::LXor, Op::BXor};
  for (Op op : ops)
    if (comm::to_string(op) == name) return op;
  throw ValueError("comm: unknown reduction operator '" + name +
                   "'; use SUM, PROD, MIN, MAX, LAND, LOR, BAND, BOR, LXOR or BXOR (tessel.comm or mpi4py.MPI)");
}

/// A Status named inside a traced function is written each time its program runs, so it
/// must outlive every program that names it: a Status passed to recv/sendrecv is kept alive
/// for the rest of the process (statuses are few and small).
comm::Status* status_ptr(nb::handle status) {
  if (status.is_none()) return nullptr;
  comm::Status* p = nb::cast<comm::Status*>(status);
  status.inc_ref();
  return p;
}

}  // namespace

void bind_comm(nb::module_& m) {
  nb::module_ c = m.def_submodule("comm_functions", "MPI communication behind tessel.comm");

  nb::class_<Comm>(c, "Comm", "An MPI communicator (tessel's; tessel.comm also takes mpi4py communicators).")
      .def_prop_ro("rank", &Comm::rank)
      .def_prop_ro("size", &Comm::size)
      .def("Get_rank", &Comm::rank, "mpi4py's spelling of `rank`.")
      .def("Get_size", &Comm::size, "mpi4py's spelling of `size`.")
      .def("split", &Comm::split, nb::arg("color"), nb::arg("key") = 0,
           "MPI_Comm_split: processes of one color form a communicator, ranked by key (collective).")
      .def("dup", &Comm::dup, "MPI_Comm_dup (collective).")
      .def("__repr__", &Comm::to_string)
      .def("__eq__", [](const Comm& a, nb::handle b) { return nb::isinstance<Comm>(b) && a == nb::cast<Comm>(b); })
      .def("__hash__", [](const Comm& x) { return nb::hash(nb::int_(reinterpret_cast<uintptr_t>(x.impl().get()))); });
  c.def("world", &comm::world, "MPI_COMM_WORLD.");
  c.def("adopt_address", [](uintptr_t address) { return Comm::adopt(reinterpret_cast<const void*>(address)); },
        nb::arg("address"), "A tessel Comm over the MPI_Comm stored at `address` (mpi4py: MPI._addressof(comm)).");

  nb::class_<comm::Status>(c, "Status", "The envelope of a received message (MPI_Status): source, tag, count.")
      .def(nb::init<>())
      .def_ro("source", &comm::Status::source)
      .def_ro("tag", &comm::Status::tag)
      .def_ro("count", &comm::Status::count, "Elements received.")
      .def("Get_source", [](const comm::Status& s) { return s.source; })
      .def("Get_tag", [](const comm::Status& s) { return s.tag; })
      .def("__repr__", [](const comm::Status& s) {
        return "Status(source=" + std::to_string(s.source) + ", tag=" + std::to_string(s.tag) +
               ", count=" + std::to_string(s.count) + ")";
      });
  c.attr("ANY_SOURCE") = comm::ANY_SOURCE;
  c.attr("ANY_TAG") = comm::ANY_TAG;

  const auto released = nb::call_guard<nb::gil_scoped_release>();
  c.def("allreduce", [](const Array& x, const std::string& op, const Comm& k) { return comm::allreduce(x, to_op(op), k); },
        released);
  c.def("reduce", [](const Array& x, const std::string& op, int root, const Comm& k) {
    return comm::reduce(x, to_op(op), root, k);
  }, released);
  c.def("scan", [](const Array& x, const std::string& op, const Comm& k) { return comm::scan(x, to_op(op), k); }, released);
  c.def("bcast", &comm::bcast, released);
  c.def("allgather", &comm::allgather, released);
  c.def("gather", &comm::gather, released);
  c.def("scatter", &comm::scatter, released);
  c.def("alltoall", &comm::alltoall, released);
  c.def("allgatherv", &comm::allgatherv, released);
  c.def("gatherv", &comm::gatherv, released);
  c.def("alltoallv", &comm::alltoallv, released);
  c.def("barrier", &comm::barrier, released);
  c.def("send", [](const Array& x, int dest, int tag, const Comm& k) {
    nb::gil_scoped_release release;
    comm::send(x, dest, {.tag = tag, .comm = k});
  });
  c.def("recv", [](const Array& like, int source, int tag, const Comm& k, nb::handle status) {
    comm::Status* st = status_ptr(status);
    nb::gil_scoped_release release;
    return comm::recv(like, {.source = source, .tag = tag, .comm = k, .status = st});
  }, nb::arg("like"), nb::arg("source"), nb::arg("tag"), nb::arg("comm"), nb::arg("status").none());
  c.def("sendrecv", [](const Array& sendbuf, const Array& like, int source, int dest, int sendtag, int recvtag,
                       const Comm& k, nb::handle status) {
    comm::Status* st = status_ptr(status);
    nb::gil_scoped_release release;
    return comm::sendrecv(sendbuf, like, source, dest, {.sendtag = sendtag, .recvtag = recvtag, .comm = k, .status = st});
  }, nb::arg("sendbuf"), nb::arg("like"), nb::arg("source"), nb::arg("dest"), nb::arg("sendtag"), nb::arg("recvtag"),
     nb::arg("comm"), nb::arg("status").none());
}

}  // namespace tessel::python
