// Helpers shared by the files defining ts::comm primitives (primitives.h).
#include "comm/primitives.h"

#include <cstring>

#include "comm/comm_impl.h"
#include "ir/abstract_eval.h"
#include "ops/op_util.h"
#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::comm::detail {

ir::Params comm_params(const Comm& c) { return ir::Params{{"comm", comm_param(c)}}; }

void finish_token(const Array& token) {
  if (!token.is_tracer()) token.block_until_ready();
}

std::vector<Array> rebind(std::string_view name, std::vector<Array> ins, const ir::Params& from,
                          std::initializer_list<std::pair<std::string, ir::ParamValue>> extra) {
  ir::Params p{{"comm", from.get<std::shared_ptr<const ir::ParamObject>>("comm")}};
  for (const auto& [k, v] : extra) p.set(k, v);
  return ops::bind(ir::lookup_primitive(name), ins, p);
}

Array rebind1(std::string_view name, std::vector<Array> ins, const ir::Params& from,
              std::initializer_list<std::pair<std::string, ir::ParamValue>> extra) {
  return rebind(name, std::move(ins), from, extra)[0];
}

std::string adjoint_name(Adjoint a) {
  switch (a) {
    case Adjoint::replicated: return "replicated";
    case Adjoint::replicated_transposed: return "replicated_transposed";
    case Adjoint::exact: return "exact";
  }
  return "?";
}

Adjoint adjoint_of(const ir::Params& p) {
  if (!p.has("adjoint")) return Adjoint::replicated;
  const std::string& name = p.get<std::string>("adjoint");
  for (Adjoint a : {Adjoint::replicated, Adjoint::replicated_transposed, Adjoint::exact})
    if (adjoint_name(a) == name) return a;
  throw Error("internal: unknown comm adjoint '" + name + "'");
}

ir::Params with_adjoint(const ir::Params& p, Adjoint a) {
  ir::Params q;
  for (const auto& [k, v] : p.items())
    if (k != "adjoint") q.set(k, v);
  if (a != Adjoint::replicated) q.set("adjoint", adjoint_name(a));
  return q;
}

Array transpose_replicated(const ir::Primitive& self, const Array& ct, std::span<const Aval> avals,
                           const ir::Params& p) {
  const Adjoint back =
      adjoint_of(p) == Adjoint::replicated_transposed ? Adjoint::replicated : Adjoint::replicated_transposed;
  return ops::bind1(self, {ops::instantiate_zeros(ct, self.abstract_eval(avals, p)[0])}, with_adjoint(p, back));
}

int root_of(const ir::Params& p) { return int(p.get_int("root")); }
int rank_of(const ir::Params& p) { return comm_of(p).rank(); }
int size_of(const ir::Params& p) { return comm_of(p).size(); }

void check_example(const ir::Primitive& self, const Array& x, int64_t dim, const ir::Params& p) {
  Shape s = x.shape();
  if (dim >= 0 && dim < int64_t(s.size())) s.erase(s.begin() + dim);
  const Aval example(s, x.dtype());
  ir::abstract_eval(self, std::span<const Aval>(&example, 1), p);
}

Shape prepend(int64_t n, const Shape& shape) {
  Shape s{n};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

void copy_unless_aliased(const void* in, void* out, size_t bytes) {
  if (in != out && bytes) std::memcpy(out, in, bytes);
}

}  // namespace tessel::comm::detail
