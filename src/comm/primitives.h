#pragma once
// Helpers shared by the files defining ts::comm primitives.
#include <initializer_list>
#include <string_view>
#include <utility>

#include "ir/primitive.h"
#include "tessel/comm.h"

namespace tessel::comm::detail {

/// Every comm equation: kept although its result may be unused, and run in program order
/// with the other communication of the device.
inline constexpr uint32_t kCommEffects = ir::kSideEffect | ir::kOrdered;

/// Params {comm} for `c` (initializes MPI).
ir::Params comm_params(const Comm& c);

/// Eagerly, waits for a token result (barrier, send) and rethrows the call's error; under
/// a trace, nothing.
void finish_token(const Array& token);

/// Binds the comm primitive `name` on `ins` over the communicator of the equation whose
/// params are `from`, with `extra` params: how rules call another communication (the
/// transpose of gather is a scatter on the same communicator, ...).
std::vector<Array> rebind(std::string_view name, std::vector<Array> ins, const ir::Params& from,
                          std::initializer_list<std::pair<std::string, ir::ParamValue>> extra = {});
/// The same for primitives of one result.
Array rebind1(std::string_view name, std::vector<Array> ins, const ir::Params& from,
              std::initializer_list<std::pair<std::string, ir::ParamValue>> extra = {});

/// The "root" parameter, and this process's rank and the size of the equation's
/// communicator.
int root_of(const ir::Params& p);
int rank_of(const ir::Params& p);
int size_of(const ir::Params& p);

/// Batch rules that move a batch dimension: runs `self`'s abstract evaluation on the
/// per-example operand (x without dimension `dim`), so a bad operand gets the error that
/// names its own shape rather than a failure to move dimensions.
void check_example(const ir::Primitive& self, const Array& x, int64_t dim, const ir::Params& p);

/// How a collective whose result is the same on every process (allreduce, allgather,
/// allgatherv, bcast) transposes: its "adjoint" parameter (docs/comm.md "Transformations").
///  replicated: the operation users call (no parameter), transposed by mpi4jax's convention
///    for replicated results into the same primitive marked replicated_transposed.
///  replicated_transposed: that transpose as an operation, with no communication (allreduce:
///    x; allgather, allgatherv: this process's rows of x; bcast: x on the root, zeros
///    elsewhere). Its transpose is the replicated operation again, so that transposing
///    twice gives back the original (mpi4jax keeps a transposed allreduce the same way).
///  exact: the operation inside the exact adjoint of another (reduce's transpose broadcasts,
///    scan's allreduces), transposed exactly (allreduce -> allreduce, bcast -> reduce to the
///    root), so that those adjoints transpose back to the operation they came from.
enum class Adjoint { replicated, replicated_transposed, exact };
Adjoint adjoint_of(const ir::Params& p);
/// `p` with the adjoint parameter `a` (none for replicated, the default).
ir::Params with_adjoint(const ir::Params& p, Adjoint a);
/// The parameter's value for `a` ("exact", ...), for rebind's `extra`.
std::string adjoint_name(Adjoint a);
/// The transpose rule of a replicated-result operation `self` with adjoint replicated or
/// replicated_transposed: `self` with the other of the two, on the cotangent (zeros where
/// it has none, so that every process binds the operation and its transpose communicates).
Array transpose_replicated(const ir::Primitive& self, const Array& ct, std::span<const Aval> avals,
                           const ir::Params& p);

/// (n, *shape).
Shape prepend(int64_t n, const Shape& shape);
/// Copies `bytes` from `in` to `out` unless they are the same buffer (kernels whose output
/// may alias their input, see ir::InplaceFn).
void copy_unless_aliased(const void* in, void* out, size_t bytes);

}  // namespace tessel::comm::detail
