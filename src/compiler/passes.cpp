#include "compiler/passes.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "core/config.h"
#include "ir/index_map.h"
#include "ir/trace.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/special.h"

namespace tessel::compiler {
ir::Program without_equations(const ir::Program& p) {
  ir::Program out;
  out.invars = p.invars;
  out.constvars = p.constvars;
  out.consts = p.consts;
  out.outvars = p.outvars;
  out.name = p.name;
  return out;
}

namespace {

using ir::Atom;
using ir::Equation;
using ir::Program;
using ir::Var;

/// Variable substitution while rewriting a program.
class Subst {
 public:
  Atom operator()(const Atom& a) const {
    if (a.is_literal()) return a;
    auto it = map_.find(a.var().get());
    return it == map_.end() ? a : it->second;
  }
  void set(const Var& from, Atom to) { map_.insert_or_assign(from.get(), std::move(to)); }

 private:
  std::unordered_map<const ir::VarNode*, Atom> map_;
};

/// How many times each variable of `p` is read: by its equations and as a program output.
std::unordered_map<const ir::VarNode*, int> read_counts(const Program& p) {
  std::unordered_map<const ir::VarNode*, int> reads;
  for (const Equation& e : p.eqns)
    for (auto& a : e.inputs)
      if (!a.is_literal()) ++reads[a.var().get()];
  for (auto& a : p.outvars)
    if (!a.is_literal()) ++reads[a.var().get()];
  return reads;
}

Program with_header(const Program& p) {
  Program out = without_equations(p);
  out.outvars.clear();
  return out;
}

void finish(Program& out, const Program& p, const Subst& s) {
  for (auto& a : p.outvars) out.outvars.push_back(s(a));
}

std::vector<Atom> inline_into(Program& out, const Program& inner, const std::vector<Atom>& args);

// Appends src's equations to `out`, inlining nested `jit` calls. With `fresh_vars`, outputs
// get new variables (a program inlined twice must not define a variable twice).
void append_equations(Program& out, const Program& src, Subst& s, bool fresh_vars) {
  for (const Equation& e : src.eqns) {
    std::vector<Atom> ins;
    for (auto& a : e.inputs) ins.push_back(s(a));
    if (e.prim->inlinable_call) {
      auto outs = inline_into(out, *e.params.get<ir::ProgramRef>("program"), ins);
      for (size_t k = 0; k < outs.size(); ++k) s.set(e.outputs[k], outs[k]);
      continue;
    }
    Equation ne{e.prim, std::move(ins), e.outputs, e.params};
    if (fresh_vars) {
      for (auto& o : ne.outputs) {
        Var v = ir::new_var(o->aval);
        s.set(o, v);
        o = v;
      }
    }
    out.eqns.push_back(std::move(ne));
  }
}

// Inlines `inner` applied to `args` into `out`; returns the atoms of inner's outputs.
std::vector<Atom> inline_into(Program& out, const Program& inner, const std::vector<Atom>& args) {
  Subst s;
  for (size_t i = 0; i < inner.invars.size(); ++i) s.set(inner.invars[i], args[i]);
  for (size_t i = 0; i < inner.constvars.size(); ++i) {
    Var v = ir::new_var(inner.constvars[i]->aval);
    out.constvars.push_back(v);
    out.consts.push_back(inner.consts[i]);
    s.set(inner.constvars[i], v);
  }
  append_equations(out, inner, s, true);
  std::vector<Atom> r;
  for (auto& a : inner.outvars) r.push_back(s(a));
  return r;
}

constexpr int64_t kFoldMaxElements = 64;

/// How `e` reads its one operand when it only permutes its dimensions (a transpose, as its
/// index-map rule states it): output dimension i is operand dimension perm[i]; nullopt for
/// any other equation.
std::optional<std::vector<int64_t>> read_permutation(const Equation& e) {
  if (!e.prim->index_map || e.inputs.size() != 1 || e.outputs.size() != 1) return std::nullopt;
  const Aval in = e.inputs[0].aval(), out = e.outputs[0]->aval;
  if (in.dtype != out.dtype || in.ndim() != out.ndim() || in.size() != out.size()) return std::nullopt;
  const size_t rank = size_t(out.ndim());
  ir::IndexMap at_output;
  for (size_t d = 0; d < rank; ++d) at_output.push_back({int(d), 1, 0});
  const auto cases = e.prim->index_map(at_output, std::span(&in, 1), out, e.params);
  if (cases.size() != 1 || !cases[0].when.empty() || cases[0].operand != 0 || !cases[0].combine.empty() ||
      !cases[0].dynamic.empty() || cases[0].at.size() != rank)
    return std::nullopt;
  std::vector<int64_t> perm(rank, -1);
  for (size_t d = 0; d < rank; ++d) {  // operand dimension d is read at output index at[d]
    const ir::Affine& a = cases[0].at[d];
    if (a.var < 0 || size_t(a.var) >= rank || a.coef != 1 || a.off != 0 || perm[size_t(a.var)] >= 0)
      return std::nullopt;
    perm[size_t(a.var)] = int64_t(d);
  }
  return perm;
}

/// A product whose dimension numbers say which operand dimensions it batches and contracts
/// (dot_general; convolutions name theirs otherwise).
bool has_dot_dimensions(const Equation& e) {
  return e.prim->matrix_product && e.params.has("lhs_batch") && e.params.has("rhs_batch") &&
         e.params.has("lhs_contracting") && e.params.has("rhs_contracting");
}

/// When `perm` moves the rhs's free dimensions of product `d` before the lhs's (its result
/// is (batch, lhs free, rhs free)), swaps d's operands so that it computes the transposed
/// result itself and returns true: the backward pass's dK^T = q^T dS becomes dS^T q
/// written in place of a strided 2-D transpose of every head.
bool swap_operands(Equation& d, const std::vector<int64_t>& perm) {
  const int64_t nb = int64_t(d.params.get_ints("lhs_batch").size());
  const int64_t nl = d.inputs[0].aval().ndim() - nb - int64_t(d.params.get_ints("lhs_contracting").size());
  const int64_t nr = d.inputs[1].aval().ndim() - nb - int64_t(d.params.get_ints("rhs_contracting").size());
  if (nl == 0 || nr == 0 || int64_t(perm.size()) != nb + nl + nr) return false;
  std::vector<int64_t> swapped;
  for (int64_t i = 0; i < nb; ++i) swapped.push_back(i);
  for (int64_t i = 0; i < nr; ++i) swapped.push_back(nb + nl + i);
  for (int64_t i = 0; i < nl; ++i) swapped.push_back(nb + i);
  if (perm != swapped) return false;
  std::swap(d.inputs[0], d.inputs[1]);
  ir::Params params = d.params;
  params.set("lhs_batch", d.params.get_ints("rhs_batch"));
  params.set("rhs_batch", d.params.get_ints("lhs_batch"));
  params.set("lhs_contracting", d.params.get_ints("rhs_contracting"));
  params.set("rhs_contracting", d.params.get_ints("lhs_contracting"));
  d.params = std::move(params);
  return true;
}

}  // namespace

Program inline_calls(const Program& p) {
  bool any = false;
  for (auto& e : p.eqns) any |= e.prim->inlinable_call;
  if (!any) return p;
  Program out = with_header(p);
  Subst s;
  append_equations(out, p, s, false);
  finish(out, p, s);
  return out;
}

Program fold_constants(const Program& p) {
  Program out = with_header(p);
  Subst s;
  std::unordered_map<const ir::VarNode*, Array> known;  // constvar -> value
  for (size_t i = 0; i < p.constvars.size(); ++i)
    if (!p.consts[i].is_tracer()) known.emplace(p.constvars[i].get(), p.consts[i]);
  for (const Equation& e : p.eqns) {
    std::vector<Atom> ins;
    for (auto& a : e.inputs) ins.push_back(s(a));
    bool foldable = e.effects() == ir::kNoEffect && e.prim->cpu_kernel && !e.prim->eager_impl;
    for (auto& o : e.outputs) foldable &= o->aval.size() <= kFoldMaxElements;
    std::vector<Array> values;
    for (auto& a : ins) {
      if (!foldable) break;
      if (a.is_literal()) {
        values.push_back(detail::scalar_array(a.literal(), a.aval().weak_type));
      } else if (auto it = known.find(a.var().get()); it != known.end() && it->second.size() <= kFoldMaxElements) {
        values.push_back(it->second);
      } else {
        foldable = false;
      }
    }
    if (foldable) {
      auto results = detail::eval_eagerly(*e.prim, values, e.params);
      for (size_t k = 0; k < results.size(); ++k) {
        const Var& o = e.outputs[k];
        if (o->aval.shape.empty()) {
          s.set(o, Atom(results[k].scalar(), o->aval.weak_type));
        } else {
          Var v = ir::new_var(o->aval);
          out.constvars.push_back(v);
          out.consts.push_back(results[k]);
          known.emplace(v.get(), results[k]);
          s.set(o, v);
        }
      }
      continue;
    }
    out.eqns.push_back(Equation{e.prim, std::move(ins), e.outputs, e.params});
  }
  finish(out, p, s);
  return out;
}

Program eliminate_common_subexpressions(const Program& p) {
  struct Key {
    const ir::Primitive* prim;
    const std::vector<Atom>* ins;
    const ir::Params* params;
  };
  Program out = with_header(p);
  Subst s;
  std::unordered_multimap<size_t, size_t> seen;  // hash -> index into out.eqns
  for (const Equation& e : p.eqns) {
    std::vector<Atom> ins;
    for (auto& a : e.inputs) ins.push_back(s(a));
    if (e.effects() == ir::kNoEffect) {
      size_t h = std::hash<const void*>()(e.prim) ^ e.params.hash() * 31;
      for (auto& a : ins) h = h * 1000003 ^ (a.is_literal() ? a.literal().hash() : std::hash<const void*>()(a.var().get()));
      auto [lo, hi] = seen.equal_range(h);
      bool merged = false;
      for (auto it = lo; it != hi && !merged; ++it) {
        const Equation& prev = out.eqns[it->second];
        if (prev.prim == e.prim && prev.inputs == ins && prev.params == e.params) {
          for (size_t k = 0; k < e.outputs.size(); ++k) s.set(e.outputs[k], prev.outputs[k]);
          merged = true;
        }
      }
      if (merged) continue;
      seen.emplace(h, out.eqns.size());
    }
    out.eqns.push_back(Equation{e.prim, std::move(ins), e.outputs, e.params});
  }
  finish(out, p, s);
  return out;
}

Program fold_transposes_into_products(const Program& p) {
  // The transposes seen so far: output variable -> (input atom, permutation), chains of
  // transposes composed into one.
  std::unordered_map<const ir::VarNode*, std::pair<Atom, std::vector<int64_t>>> transposed;
  // The products emitted so far: output variable -> index in out.eqns; and how many times
  // each variable is read (equations and program outputs).
  std::unordered_map<const ir::VarNode*, size_t> products;
  std::unordered_map<const ir::VarNode*, int> reads = read_counts(p);
  Program out = with_header(p);
  Subst s;
  for (const Equation& e : p.eqns) {
    std::vector<Atom> ins;
    for (auto& a : e.inputs) ins.push_back(s(a));
    std::optional<std::vector<int64_t>> permutation = read_permutation(e);
    if (permutation && !ins[0].is_literal() && products.count(ins[0].var().get()) &&
        reads[ins[0].var().get()] == 1 && swap_operands(out.eqns[products.at(ins[0].var().get())], *permutation)) {
      out.eqns[products.at(ins[0].var().get())].outputs = e.outputs;  // the product now computes the transpose
      continue;
    }
    if (permutation && !ins[0].is_literal()) {
      std::vector<int64_t> perm = std::move(*permutation);
      Atom src = ins[0];
      if (auto it = transposed.find(src.var().get()); it != transposed.end()) {
        for (auto& d : perm) d = it->second.second[size_t(d)];  // output i reads src dim inner[outer[i]]
        src = it->second.first;
      }
      transposed.emplace(e.outputs[0].get(), std::make_pair(src, std::move(perm)));
    }
    ir::Params params = e.params;
    if (has_dot_dimensions(e)) {
      products[e.outputs[0].get()] = out.eqns.size();
      const char* batch_key[2] = {"lhs_batch", "rhs_batch"};
      const char* contracting_key[2] = {"lhs_contracting", "rhs_contracting"};
      for (size_t side = 0; side < 2; ++side) {
        if (ins[side].is_literal()) continue;
        auto it = transposed.find(ins[side].var().get());
        if (it == transposed.end()) continue;
        const std::vector<int64_t>& perm = it->second.second;
        std::vector<int64_t> batch = params.get_ints(batch_key[side]),
                             contracting = params.get_ints(contracting_key[side]);
        // The free dimensions keep their order only if the permutation is increasing on them.
        const auto free = ops::free_dims(int64_t(perm.size()), batch, contracting);
        bool ordered = true;
        for (size_t i = 1; i < free.size(); ++i) ordered &= perm[size_t(free[i - 1])] < perm[size_t(free[i])];
        if (!ordered) continue;
        for (auto& d : batch) d = perm[size_t(d)];
        for (auto& d : contracting) d = perm[size_t(d)];
        params.set(batch_key[side], std::move(batch));
        params.set(contracting_key[side], std::move(contracting));
        ins[side] = it->second.first;
      }
    }
    out.eqns.push_back(Equation{e.prim, std::move(ins), e.outputs, std::move(params)});
  }
  finish(out, p, s);
  return out;
}

Program eliminate_dead_code(const Program& p) {
  std::unordered_set<const ir::VarNode*> live;
  for (auto& a : p.outvars)
    if (!a.is_literal()) live.insert(a.var().get());
  std::vector<bool> keep(p.eqns.size(), false);
  for (size_t i = p.eqns.size(); i-- > 0;) {
    const Equation& e = p.eqns[i];
    bool needed = (e.effects() & ir::kSideEffect) != 0;
    for (auto& o : e.outputs) needed |= live.count(o.get()) > 0;
    if (!needed) continue;
    keep[i] = true;
    for (auto& a : e.inputs)
      if (!a.is_literal()) live.insert(a.var().get());
  }
  Program out;
  out.invars = p.invars;
  out.name = p.name;
  for (size_t i = 0; i < p.constvars.size(); ++i) {
    if (!live.count(p.constvars[i].get())) continue;
    out.constvars.push_back(p.constvars[i]);
    out.consts.push_back(p.consts[i]);
  }
  for (size_t i = 0; i < p.eqns.size(); ++i)
    if (keep[i]) out.eqns.push_back(p.eqns[i]);
  out.outvars = p.outvars;
  return out;
}

namespace {

/// A two-operand sum or difference: what a product can be contracted into.
bool is_sum(const Equation& e) {
  return (e.prim == &ops::add_p.prim || e.prim == &ops::sub_p.prim) && e.inputs.size() == 2;
}

/// The reciprocal of a float32/float64 literal rounded to its dtype, when the literal and its
/// reciprocal are normal numbers (a division by it is then the product XLA's algebraic
/// simplifier makes of it, `x * RN(1/c)`); nullopt otherwise.
std::optional<Atom> reciprocal_literal(const Atom& c) {
  if (!c.is_literal()) return std::nullopt;
  const Scalar& v = c.literal();
  auto of = [&](auto x) -> std::optional<Atom> {
    const auto r = decltype(x)(1) / x;
    if (!std::isnormal(x) || !std::isnormal(r)) return std::nullopt;
    return Atom(Scalar(r), c.aval().weak_type);
  };
  if (v.dtype() == DType::float32) return of(v.to<float>());
  if (v.dtype() == DType::float64) return of(v.to<double>());
  return std::nullopt;
}

/// Whether `a` can be an operand of the fma computing a value of `out`'s dtype and shape:
/// the same dtype, and the same shape or rank 0 (a literal, a scalar).
bool fits(const Atom& a, const Aval& out) {
  const Aval av = a.aval();
  return av.dtype == out.dtype && (av.shape.empty() || av.shape == out.shape);
}

/// A float32/float64 literal of dtype `dt` as a double (exactly), or nullopt.
std::optional<double> float_literal(const Atom& a, DType dt) {
  if (!a.is_literal() || a.literal().dtype() != dt) return std::nullopt;
  return dt == DType::float32 ? double(a.literal().to<float>()) : a.literal().to<double>();
}

/// -c for a float32/float64 literal: exact, and -0 for 0.
Atom negated_literal(const Atom& c) {
  const Scalar& v = c.literal();
  return Atom(v.dtype() == DType::float64 ? Scalar(-v.to<double>()) : Scalar(-v.to<float>()), c.aval().weak_type);
}

/// `x op y` (op mul or add) rounded to `dt` (float32 arithmetic for float32: one rounding, as XLA folds it).
Atom folded_literal(const ir::Primitive* op, double x, double y, DType dt, bool weak) {
  auto apply = [&](auto a, auto b) {
    using T = decltype(a);
    return op == &ops::mul_p.prim ? T(a * b) : T(a + b);
  };
  if (dt == DType::float32) return Atom(Scalar(apply(float(x), float(y))), weak);
  return Atom(Scalar(apply(x, y)), weak);
}

}  // namespace

Program fold_literal_arithmetic(const Program& p) {
  if (!config::get_flag(config::kFpContract)) return p;
  const ir::Primitive *add = &ops::add_p.prim, *sub = &ops::sub_p.prim, *mul = &ops::mul_p.prim,
                      *div = &ops::div_p.prim;
  // A variable's value as `operand op literal` (op add or mul), or `literal - operand` (op sub).
  struct Chain {
    const ir::Primitive* op;
    Atom operand, literal;
  };
  std::unordered_map<const ir::VarNode*, Chain> chains;
  Program out = without_equations(p);
  bool changed = false;
  for (const Equation& original : p.eqns) {
    Equation e = original;
    const bool binary = e.inputs.size() == 2 && e.outputs.size() == 1 &&
                        (e.prim == add || e.prim == sub || e.prim == mul || e.prim == div ||
                         e.prim == &ops::pow_p.prim || e.prim == &ops::xla_pow_p);
    const DType dt = e.outputs.empty() ? DType::bool_ : e.outputs[0]->aval.dtype;
    if (!binary || (dt != DType::float32 && dt != DType::float64)) {
      out.eqns.push_back(std::move(e));
      continue;
    }
    // pow(a, c) for c = 2, 3, -1 is a * a, a * (a * a), 1 / a (XLA's simplifier and code
    // generator, checked against jax.jit of lax.pow); other exponents stay powers.
    if ((e.prim == &ops::pow_p.prim || e.prim == &ops::xla_pow_p) && !e.inputs[0].is_literal()) {
      const std::optional<double> c = float_literal(e.inputs[1], dt);
      const Atom a = e.inputs[0];
      if (c == 2.0) {
        e = Equation{mul, {a, a}, e.outputs, {}};
      } else if (c == 3.0) {
        ir::Var square = ir::new_var(e.outputs[0]->aval);
        out.eqns.push_back(Equation{mul, {a, a}, {square}, {}});
        e = Equation{mul, {a, Atom(square)}, e.outputs, {}};
      } else if (c == -1.0) {
        e = Equation{div, {Atom(dt == DType::float32 ? Scalar(1.0f) : Scalar(1.0), true), a}, e.outputs, {}};
      }
    }
    // Canonical forms: a - c is a + (-c), a / c is a * RN(1/c), constants on the right.
    if (e.prim == sub && !e.inputs[0].is_literal()) {
      if (float_literal(e.inputs[1], dt)) {
        e.prim = add;
        e.inputs[1] = negated_literal(e.inputs[1]);
      }
    } else if (e.prim == div && !e.inputs[0].is_literal() && float_literal(e.inputs[1], dt)) {
      if (auto r = reciprocal_literal(e.inputs[1])) {
        e.prim = mul;
        e.inputs[1] = *r;
      }
    }
    if ((e.prim == add || e.prim == mul) && e.inputs[0].is_literal() && !e.inputs[1].is_literal())
      std::swap(e.inputs[0], e.inputs[1]);
    const std::optional<double> c2 = float_literal(e.inputs[1], dt);
    if ((e.prim == add || e.prim == mul) && !e.inputs[0].is_literal() && c2) {
      const bool weak = e.inputs[1].aval().weak_type;
      auto it = chains.find(e.inputs[0].var().get());
      if (it != chains.end() && it->second.op == e.prim) {
        // (a + c1) + c2 => a + RN(c1 + c2); (a * c1) * c2 => a * RN(c1 * c2).
        e.inputs = {it->second.operand, folded_literal(e.prim, *float_literal(it->second.literal, dt), *c2, dt, weak)};
      } else if (it != chains.end() && it->second.op == sub && e.prim == add) {
        // (c1 - a) + c2 => RN(c1 + c2) - a.
        e.prim = sub;
        e.inputs = {folded_literal(add, *float_literal(it->second.literal, dt), *c2, dt, weak), it->second.operand};
      }
    }
    if ((e.prim == add || e.prim == mul) && !e.inputs[0].is_literal() && float_literal(e.inputs[1], dt))
      chains.insert_or_assign(e.outputs[0].get(), Chain{e.prim, e.inputs[0], e.inputs[1]});
    else if (e.prim == sub && float_literal(e.inputs[0], dt) && !e.inputs[1].is_literal())
      chains.insert_or_assign(e.outputs[0].get(), Chain{sub, e.inputs[1], e.inputs[0]});
    changed = changed || e.prim != original.prim || e.inputs != original.inputs;
    out.eqns.push_back(std::move(e));
  }
  return changed ? out : p;
}

Program contract_multiply_adds(const Program& p) {
  if (!config::get_flag(config::kFpContract)) return p;
  std::unordered_map<const ir::VarNode*, int> reads = read_counts(p);
  // Products: a mul's output -> its equation (fold_literal_arithmetic has made divisions by
  // literals products by their reciprocals already, as XLA does before contracting).
  std::unordered_map<const ir::VarNode*, size_t> products;
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const Equation& e = p.eqns[i];
    if (e.inputs.size() == 2 && e.outputs.size() == 1 && e.prim == &ops::mul_p.prim) products[e.outputs[0].get()] = i;
  }
  // Which product each sum takes in: the first operand's when both qualify (LLVM's DAG
  // combiner, which contracts XLA's code, tries the first operand first too).
  std::unordered_map<size_t, std::pair<size_t, size_t>> contracted;  // sum -> (operand, product)
  std::unordered_set<size_t> absorbed;
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const Equation& e = p.eqns[i];
    if (!is_sum(e) || e.outputs.size() != 1) continue;
    const Aval& out = e.outputs[0]->aval;
    if (out.dtype != DType::float32 && out.dtype != DType::float64) continue;
    for (size_t k = 0; k < 2; ++k) {
      const Atom& a = e.inputs[k];
      if (a.is_literal() || reads[a.var().get()] != 1) continue;
      auto it = products.find(a.var().get());
      if (it == products.end() || absorbed.count(it->second)) continue;
      const Equation& m = p.eqns[it->second];
      if (m.outputs[0]->aval.shape != out.shape || !fits(m.inputs[0], out) || !fits(m.inputs[1], out) ||
          !fits(e.inputs[1 - k], out))
        continue;
      contracted.emplace(i, std::make_pair(k, it->second));
      absorbed.insert(it->second);
      break;
    }
  }
  if (contracted.empty()) return p;
  Program out = without_equations(p);
  // -a: a literal negated in place (exact), a variable through a neg equation.
  auto negated = [&](const Atom& a) -> Atom {
    if (a.is_literal()) return negated_literal(a);
    ir::Var v = ir::new_var(a.aval());
    out.eqns.push_back(Equation{&ops::neg_p.prim, {a}, {v}, {}});
    return Atom(v);
  };
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    if (absorbed.count(i)) continue;
    auto it = contracted.find(i);
    if (it == contracted.end()) {
      out.eqns.push_back(p.eqns[i]);
      continue;
    }
    const Equation& e = p.eqns[i];
    const auto [k, j] = it->second;
    const Equation& m = p.eqns[j];
    Atom a = m.inputs[0], b = m.inputs[1], c = e.inputs[1 - k];
    if (e.prim == &ops::sub_p.prim) {
      if (k == 0) c = negated(c);  // a*b - c
      else a = negated(a);         // c - a*b
    }
    out.eqns.push_back(Equation{&ops::fma_p, {a, b, c}, e.outputs, {}});
  }
  return out;
}

Program simplify(const Program& p, bool fold) {
  Program inlined = fold_transposes_into_products(inline_calls(p));
  Program folded = eliminate_common_subexpressions(fold ? fold_constants(inlined) : inlined);
  return contract_multiply_adds(eliminate_dead_code(fold_literal_arithmetic(folded)));
}

}  // namespace tessel::compiler
