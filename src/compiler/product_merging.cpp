#include "compiler/product_merging.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "compiler/passes.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/linalg.h"

namespace tessel::compiler {

namespace {

using ir::Atom;
using ir::Equation;
using ir::Program;
using ir::Var;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

bool is_product(const Equation& e) {
  return e.prim->matrix_product && e.inputs.size() == 2 && !e.inputs[0].is_literal() &&
         !e.inputs[1].is_literal() && e.params.has("lhs_contracting");
}

/// An `add` of two variables of its own type (no broadcast scalar).
bool is_plain_add(const Equation& e) {
  if (e.prim != &ops::add_p.prim || e.inputs.size() != 2 || e.outputs.size() != 1) return false;
  for (const Atom& a : e.inputs)
    if (a.is_literal() || !(a.aval() == e.outputs[0]->aval)) return false;
  return true;
}

/// Where each variable of a program is defined and read.
class Positions {
 public:
  explicit Positions(const Program& p) {
    // Inputs and constants come before every equation, in their order.
    int64_t at = -int64_t(p.invars.size() + p.constvars.size()) - 1;
    for (const Var& v : p.invars) def_[v.get()] = at++;
    for (const Var& v : p.constvars) def_[v.get()] = at++;
    for (size_t i = 0; i < p.eqns.size(); ++i) {
      for (const Atom& a : p.eqns[i].inputs) {
        if (a.is_literal()) continue;
        first_read_.try_emplace(a.var().get(), int64_t(i));
        ++reads_[a.var().get()];
      }
      for (const Var& o : p.eqns[i].outputs) def_[o.get()] = int64_t(i);
    }
    for (const Atom& a : p.outvars)
      if (!a.is_literal()) ++reads_[a.var().get()];
  }
  /// The index of the equation that defines `a` (negative for inputs and constants).
  int64_t defined(const Atom& a) const {
    if (a.is_literal()) return std::numeric_limits<int64_t>::min();
    auto it = def_.find(a.var().get());
    return it == def_.end() ? std::numeric_limits<int64_t>::min() : it->second;
  }
  /// The index of the first equation that reads `v` (kNever when none does).
  int64_t first_read(const Var& v) const {
    auto it = first_read_.find(v.get());
    return it == first_read_.end() ? kNever : it->second;
  }
  /// How many times `v` is read, by equations and as a program output.
  int reads(const Var& v) const {
    auto it = reads_.find(v.get());
    return it == reads_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<const ir::VarNode*, int64_t> def_, first_read_;
  std::unordered_map<const ir::VarNode*, int> reads_;
};

const char* const kBatchKey[2] = {"lhs_batch", "rhs_batch"};
const char* const kContractingKey[2] = {"lhs_contracting", "rhs_contracting"};

/// Floating-point operations of product `e`.
int64_t product_flops(const Equation& e) {
  int64_t k = 1;
  for (int64_t d : e.params.get_ints("lhs_contracting")) k *= e.inputs[0].aval().shape[size_t(d)];
  return 2 * e.outputs[0]->aval.size() * k;
}

/// Whether operand avals `a` and `b` agree except in size along dimension `dim`.
bool agree_except(const Aval& a, const Aval& b, int64_t dim) {
  if (a.dtype != b.dtype || a.weak_type != b.weak_type || a.ndim() != b.ndim()) return false;
  for (int64_t d = 0; d < a.ndim(); ++d)
    if (d != dim && a.shape[size_t(d)] != b.shape[size_t(d)]) return false;
  return true;
}

/// Whether some equation of `p` concatenates exactly `atoms`, in this order, along `dim`.
bool concatenated(const Program& p, const std::vector<Atom>& atoms, int64_t dim) {
  for (const Equation& e : p.eqns)
    if (e.prim == &ops::concatenate_p && e.params.get_int("dimension") == dim && e.inputs == atoms) return true;
  return false;
}

/// The order (a permutation of 0..n-1) in which an equation of `p` concatenates the same
/// n variables `atoms` along `dim`, if one does.
std::optional<std::vector<size_t>> concatenation_order(const Program& p, const std::vector<Atom>& atoms, int64_t dim) {
  for (const Equation& e : p.eqns) {
    if (e.prim != &ops::concatenate_p || e.params.get_int("dimension") != dim || e.inputs.size() != atoms.size())
      continue;
    std::vector<size_t> order;
    for (const Atom& in : e.inputs) {
      auto it = std::find(atoms.begin(), atoms.end(), in);
      if (it == atoms.end() || std::find(order.begin(), order.end(), size_t(it - atoms.begin())) != order.end()) break;
      order.push_back(size_t(it - atoms.begin()));
    }
    if (order.size() == atoms.size()) return order;
  }
  return std::nullopt;
}

/// 0..n-1 sorted by where `atoms` are defined (inputs by their position).
std::vector<size_t> definition_order(const Positions& pos, const std::vector<Atom>& atoms) {
  std::vector<size_t> order(atoms.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pos.defined(atoms[a]) < pos.defined(atoms[b]); });
  return order;
}

template <class T>
std::vector<T> permuted(const std::vector<T>& v, const std::vector<size_t>& order) {
  std::vector<T> r;
  for (size_t i : order) r.push_back(v[i]);
  return r;
}

/// Sum of the elements of `atoms`.
int64_t elements(const std::vector<Atom>& atoms) {
  int64_t n = 0;
  for (const Atom& a : atoms) n += a.aval().size();
  return n;
}

/// Appends `prim(ins)[params]` to `out` with a new output variable (or `result`) and returns it.
Var emit(std::vector<Equation>& out, const ir::Primitive& prim, std::vector<Atom> ins, ir::Params params,
         Var result = nullptr) {
  std::vector<Aval> in_avals;
  for (const Atom& a : ins) in_avals.push_back(a.aval());
  if (!result) result = ir::new_var(prim.abstract_eval(in_avals, params)[0]);
  out.push_back(Equation{&prim, std::move(ins), {result}, std::move(params)});
  return result;
}

Var emit_concatenation(std::vector<Equation>& out, std::vector<Atom> ins, int64_t dim) {
  return emit(out, ops::concatenate_p, std::move(ins), ir::Params{{"dimension", dim}});
}

/// Replaces p's equations by those not at indices `removed`, with `merged` inserted before
/// equation `place` (at the end when `place` is past the last).
void splice(Program& p, const std::vector<size_t>& removed, size_t place, std::vector<Equation> merged) {
  std::vector<Equation> eqns;
  for (size_t i = 0; i <= p.eqns.size(); ++i) {
    if (i == place) eqns.insert(eqns.end(), merged.begin(), merged.end());
    if (i < p.eqns.size() && std::find(removed.begin(), removed.end(), i) == removed.end())
      eqns.push_back(std::move(p.eqns[i]));
  }
  p.eqns = std::move(eqns);
}

/// The dimension along which merged products concatenate side `side`'s operand: its last
/// free dimension (-1 when it has none).
int64_t last_free_dim(const Equation& e, size_t side) {
  const Axes free = ops::free_dims(e.inputs[side].aval().ndim(), e.params.get_ints(kBatchKey[side]),
                                   e.params.get_ints(kContractingKey[side]));
  return free.empty() ? -1 : free.back();
}

/// Products of `p` that read the same operand on one side.
struct Siblings {
  size_t shared_side;
  std::vector<size_t> eqns;
};

bool siblings(const Equation& a, const Equation& b, size_t shared, int64_t dim) {
  const size_t other = 1 - shared;
  return is_product(b) && b.inputs[shared] == a.inputs[shared] && b.params == a.params &&
         b.outputs[0]->aval.dtype == a.outputs[0]->aval.dtype &&
         agree_except(a.inputs[other].aval(), b.inputs[other].aval(), dim);
}

/// Merges siblings `s` when that pays and the merged product fits between the last
/// definition of an operand and the first read of a result; false otherwise.
bool merge_siblings(Program& p, const Positions& pos, const Siblings& s) {
  const size_t shared = s.shared_side, other = 1 - shared;
  const Equation& first = p.eqns[s.eqns[0]];
  const int64_t dim = last_free_dim(first, other);
  int64_t last_def = pos.defined(first.inputs[shared]), first_read = kNever, flops = 0;
  std::vector<Atom> others;
  std::vector<Var> results;
  for (size_t i : s.eqns) {
    const Equation& e = p.eqns[i];
    others.push_back(e.inputs[other]);
    results.push_back(e.outputs[0]);
    last_def = std::max(last_def, pos.defined(e.inputs[other]));
    first_read = std::min(first_read, pos.first_read(e.outputs[0]));
    flops += product_flops(e);
  }
  if (last_def >= first_read) return false;
  const std::vector<size_t> order = concatenation_order(p, others, dim).value_or(definition_order(pos, others));
  others = permuted(others, order);
  results = permuted(results, order);
  const int64_t copied = concatenated(p, others, dim) ? 0 : elements(others);
  if (copied * kMinFlopsPerCopiedElement > flops) return false;

  std::vector<Equation> merged;
  std::vector<Atom> ins(2, first.inputs[shared]);
  ins[other] = emit_concatenation(merged, others, dim);
  const Var product = emit(merged, *first.prim, ins, first.params);
  // The result dimension that holds the concatenated one: the rhs's free dimensions follow
  // the batch and lhs free dimensions; an lhs's last free dimension precedes the rhs's.
  const int64_t rhs_free = int64_t(ops::free_dims(first.inputs[1].aval().ndim(), first.params.get_ints("rhs_batch"),
                                                  first.params.get_ints("rhs_contracting"))
                                       .size());
  const int64_t out_dim = other == 1 ? product->aval.ndim() - 1 : product->aval.ndim() - 1 - rhs_free;
  int64_t at = 0;
  for (const Var& r : results) {
    Shape start(size_t(product->aval.ndim()), 0), limit = product->aval.shape, strides(start.size(), 1);
    start[size_t(out_dim)] = at;
    at += r->aval.shape[size_t(out_dim)];
    limit[size_t(out_dim)] = at;
    emit(merged, ops::slice_p, {Atom(product)},
         ir::Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}}, r);
  }

  // Right after the last operand's definition (all results are read later).
  splice(p, s.eqns, size_t(std::max<int64_t>(last_def + 1, 0)), std::move(merged));
  return true;
}

/// Merges the first siblings of `p` that can be merged; false when none can.
bool merge_some_siblings(Program& p) {
  const Positions pos(p);
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    if (!is_product(p.eqns[i])) continue;
    for (size_t shared = 0; shared < 2; ++shared) {
      const int64_t dim = last_free_dim(p.eqns[i], 1 - shared);
      if (dim < 0) continue;
      Siblings s{shared, {i}};
      for (size_t j = i + 1; j < p.eqns.size(); ++j)
        if (siblings(p.eqns[i], p.eqns[j], shared, dim)) s.eqns.push_back(j);
      if (s.eqns.size() > 1 && merge_siblings(p, pos, s)) return true;
    }
  }
  return false;
}

/// The terms of the sum computed by `add` equation `root`: the atoms that a tree of adds
/// (each read only by the next) sums, and the indices of the tree's inner adds.
void sum_terms(const Program& p, const Positions& pos, const Atom& a, std::vector<Atom>& terms,
               std::vector<size_t>& inner) {
  const int64_t d = pos.defined(a);
  if (d >= 0 && is_plain_add(p.eqns[size_t(d)]) && pos.reads(a.var()) == 1 &&
      p.eqns[size_t(d)].outputs[0]->aval == a.aval()) {
    inner.push_back(size_t(d));
    for (const Atom& in : p.eqns[size_t(d)].inputs) sum_terms(p, pos, in, terms, inner);
    return;
  }
  terms.push_back(a);
}

/// Whether products `a` and `b` can be one product over operands concatenated along their
/// last contracting dimensions.
bool summable(const Equation& a, const Equation& b) {
  const auto& lc = a.params.get_ints("lhs_contracting");
  const auto& rc = a.params.get_ints("rhs_contracting");
  return !lc.empty() && b.params == a.params && b.outputs[0]->aval == a.outputs[0]->aval &&
         agree_except(a.inputs[0].aval(), b.inputs[0].aval(), lc.back()) &&
         agree_except(a.inputs[1].aval(), b.inputs[1].aval(), rc.back());
}

/// Replaces the sum at `add` equation `root` by one product over the terms that are
/// summable products read only by the sum, plus the other terms; false when fewer than two
/// terms are such products or the merge does not pay.
bool merge_sum(Program& p, const Positions& pos, size_t root) {
  std::vector<Atom> terms;
  std::vector<size_t> removed;
  for (const Atom& in : p.eqns[root].inputs) sum_terms(p, pos, in, terms, removed);
  std::vector<size_t> products;  // equation indices of the merged terms
  std::vector<Atom> rest;
  for (const Atom& t : terms) {
    const int64_t d = pos.defined(t);
    const bool product = d >= 0 && is_product(p.eqns[size_t(d)]) && pos.reads(t.var()) == 1 &&
                         t.aval() == p.eqns[root].outputs[0]->aval &&
                         (products.empty() || summable(p.eqns[products[0]], p.eqns[size_t(d)]));
    if (product) {
      products.push_back(size_t(d));
    } else {
      rest.push_back(t);
    }
  }
  if (products.size() < 2) return false;
  const Equation& first = p.eqns[products[0]];
  const int64_t dims[2] = {first.params.get_ints("lhs_contracting").back(),
                           first.params.get_ints("rhs_contracting").back()};
  std::vector<Atom> operands[2];
  int64_t flops = 0;
  for (size_t i : products) {
    for (size_t side = 0; side < 2; ++side) operands[side].push_back(p.eqns[i].inputs[side]);
    flops += product_flops(p.eqns[i]);
  }
  // The order of an existing concatenation of either operand list, else that of the side
  // defined earlier (parameters, typically, which the forward pass concatenates in their order).
  std::optional<std::vector<size_t>> order = concatenation_order(p, operands[0], dims[0]);
  if (!order) order = concatenation_order(p, operands[1], dims[1]);
  if (!order) {
    int64_t last[2] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()};
    for (size_t side = 0; side < 2; ++side)
      for (const Atom& a : operands[side]) last[side] = std::max(last[side], pos.defined(a));
    order = definition_order(pos, operands[last[1] < last[0] ? 1 : 0]);
  }
  int64_t copied = 0;
  for (size_t side = 0; side < 2; ++side) {
    operands[side] = permuted(operands[side], *order);
    if (!concatenated(p, operands[side], dims[side])) copied += elements(operands[side]);
  }
  if (copied * kMinFlopsPerCopiedElement > flops) return false;

  std::vector<Equation> merged;
  const Var lhs = emit_concatenation(merged, operands[0], dims[0]);
  const Var rhs = emit_concatenation(merged, operands[1], dims[1]);
  const Var result = p.eqns[root].outputs[0];
  Var sum = emit(merged, *first.prim, {Atom(lhs), Atom(rhs)}, first.params, rest.empty() ? result : nullptr);
  const ir::Primitive& add = *p.eqns[root].prim;
  for (size_t i = 0; i < rest.size(); ++i)
    sum = emit(merged, add, {Atom(sum), rest[i]}, {}, i + 1 == rest.size() ? result : nullptr);

  removed.insert(removed.end(), products.begin(), products.end());
  removed.push_back(root);
  splice(p, removed, root, std::move(merged));
  return true;
}

/// Merges the products of the first sum of `p` that can be merged; false when none can.
bool merge_some_sum(Program& p) {
  const Positions pos(p);
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const Equation& e = p.eqns[i];
    if (!is_plain_add(e)) continue;
    // A sum's root: an add that is not itself a term of another add's tree.
    const int64_t reader = pos.reads(e.outputs[0]) == 1 ? pos.first_read(e.outputs[0]) : kNever;
    if (reader != kNever && is_plain_add(p.eqns[size_t(reader)]) &&
        p.eqns[size_t(reader)].outputs[0]->aval == e.outputs[0]->aval)
      continue;
    if (merge_sum(p, pos, i)) return true;
  }
  return false;
}

}  // namespace

bool merge_products(Program& p) {
  bool any = false;
  for (const Equation& e : p.eqns) any |= is_product(e);
  if (!any) return false;
  // Sums first: their concatenations fix the order that the siblings then reuse.
  // After each merge, concatenations of the same operands become one, so that products
  // reading them are seen to share an operand.
  bool merged = false;
  while (merge_some_sum(p)) {
    p = eliminate_common_subexpressions(p);
    merged = true;
  }
  while (merge_some_siblings(p)) {
    p = eliminate_common_subexpressions(p);
    merged = true;
  }
  return merged;
}

}  // namespace tessel::compiler
