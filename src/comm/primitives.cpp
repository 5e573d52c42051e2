// Helpers shared by the files defining ts::comm primitives (primitives.h).
#include "comm/primitives.h"

#include <cstring>

#include "comm/comm_impl.h"
#include "ir/abstract_eval.h"
#include "ops/op_util.h"

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
