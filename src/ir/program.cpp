#include "ir/program.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/abstract_eval.h"
#include "ir/trace.h"
#include "tessel/error.h"

namespace tessel::ir {

Var new_var(Aval aval) {
  static std::atomic<uint64_t> counter{0};
  return std::make_shared<VarNode>(VarNode{std::move(aval), counter.fetch_add(1, std::memory_order_relaxed)});
}

std::vector<Aval> Program::in_avals() const {
  std::vector<Aval> r;
  for (auto& v : invars) r.push_back(v->aval);
  return r;
}

std::vector<Aval> Program::out_avals() const {
  std::vector<Aval> r;
  for (auto& a : outvars) r.push_back(a.aval());
  return r;
}

namespace {

std::string type_str(const Aval& a) {
  std::string s = dtype_short_name(a.dtype);
  s += "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  return s + "]";
}

class Printer {
 public:
  explicit Printer(const EquationNote* note = nullptr) : note_(note) {}
  std::string print(const Program& p, const std::string& indent) {
    std::ostringstream os;
    os << "{ lambda ";
    for (auto& v : p.constvars) os << decl(v) << " ";
    os << "; ";
    for (size_t i = 0; i < p.invars.size(); ++i) os << (i ? " " : "") << decl(p.invars[i]);
    os << ". let\n";
    for (auto& e : p.eqns) {
      os << indent << "    ";
      for (size_t i = 0; i < e.outputs.size(); ++i) os << (i ? " " : "") << decl(e.outputs[i]);
      os << " = " << (e.prim ? e.prim->name : "<no primitive>");
      print_params(os, e.params, indent + "    ");
      for (auto& in : e.inputs) os << " " << atom(in);
      if (note_ && *note_ && e.prim)
        if (std::string n = (*note_)(e); !n.empty()) os << "  # " << n;
      os << "\n";
    }
    os << indent << "  in (";
    for (size_t i = 0; i < p.outvars.size(); ++i) os << (i ? ", " : "") << atom(p.outvars[i]);
    os << (p.outvars.size() == 1 ? ",) }" : ") }");
    return os.str();
  }

 private:
  void print_params(std::ostream& os, const Params& params, const std::string& indent) {
    if (params.empty()) return;
    bool nested = false;
    for (auto& [k, v] : params.items())
      if (std::holds_alternative<ProgramRef>(v) || std::holds_alternative<std::vector<ProgramRef>>(v)) nested = true;
    if (!nested) {
      os << "[" << params.to_string() << "]";
      return;
    }
    os << "[\n";
    for (auto& [k, v] : params.items()) {
      os << indent << "  " << k << "=";
      if (auto* p = std::get_if<ProgramRef>(&v)) {
        os << nested_program(*p, indent + "  ");
      } else if (auto* ps = std::get_if<std::vector<ProgramRef>>(&v)) {
        os << "(\n";
        for (auto& q : *ps) os << indent << "    " << nested_program(q, indent + "    ") << "\n";
        os << indent << "  )";
      } else {
        os << param_value_to_string(v);
      }
      os << "\n";
    }
    os << indent << "]";
  }
  // The printer runs on programs that failed verification (their error messages show
  // them), so it prints whatever is missing instead of following it.
  // Nested programs print in place at every use, so programs that share bodies (a jit
  // called twice, at every level) print exponentially long; past a bound the rest is elided,
  // so that no program, one read from bytes included, makes printing (or an error message) hang.
  std::string nested_program(const ProgramRef& p, const std::string& indent) {
    if (!p) return "<no program>";
    if (printed_ > kMaxPrintedBytes) return "{ program '" + p->name + "' not printed: the text passed 16 MiB }";
    std::string text = print(*p, indent);
    printed_ += text.size();
    return text;
  }
  const EquationNote* note_;
  static constexpr size_t kMaxPrintedBytes = size_t(16) << 20;
  size_t printed_ = 0;
  std::string name(const Var& v) {
    if (!v) return "<no variable>";
    auto it = names_.find(v.get());
    if (it != names_.end()) return it->second;
    // a, b, ..., z, ba, bb, ... as JAX does.
    uint64_t n = names_.size();
    std::string s;
    do {
      s.insert(s.begin(), char('a' + n % 26));
      n /= 26;
    } while (n > 0);
    names_.emplace(v.get(), s);
    return s;
  }
  std::string decl(const Var& v) { return v ? name(v) + ":" + type_str(v->aval) : name(v); }
  std::string atom(const Atom& a) {
    if (a.is_literal()) return a.literal().to_string() + ":" + type_str(a.aval());
    return name(a.var());
  }
  std::unordered_map<const VarNode*, std::string> names_;
};

// What the printer and the rules dereference: an equation's primitive, its variables and
// the nested programs in its parameters. Programs built in this process always have them;
// a program read from bytes or assembled by hand may not.
std::string missing_part(const Equation& e) {
  if (!e.prim) return "it has no primitive";
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (!e.inputs[k].is_literal() && !e.inputs[k].var()) return "input " + std::to_string(k) + " is a null variable";
  for (size_t k = 0; k < e.outputs.size(); ++k)
    if (!e.outputs[k]) return "output " + std::to_string(k) + " is a null variable";
  for (auto& [key, v] : e.params.items()) {
    if (auto* r = std::get_if<ProgramRef>(&v); r && !*r) return "parameter '" + key + "' is a null program";
    if (auto* rs = std::get_if<std::vector<ProgramRef>>(&v))
      for (size_t k = 0; k < rs->size(); ++k)
        if (!(*rs)[k]) return "parameter '" + key + "' holds a null program at position " + std::to_string(k);
  }
  return {};
}

[[noreturn]] void verify_fail(const Program& p, size_t eqn, const std::string& what) {
  throw Error("verify_program: equation " + std::to_string(eqn) + " of program '" + p.name + "': " + what +
              "\nprogram:\n" + print_program(p));
}

}  // namespace

std::string print_program(const Program& p) { return Printer().print(p, ""); }

std::string print_program(const Program& p, const EquationNote& note) { return Printer(&note).print(p, ""); }

void verify_program(const Program& p) {
  if (p.consts.size() != p.constvars.size())
    throw Error("verify_program: " + std::to_string(p.constvars.size()) + " constvars but " +
                std::to_string(p.consts.size()) + " constant values");
  std::unordered_set<const VarNode*> defined;
  auto define = [&](const Var& v, size_t eqn) {
    if (!defined.insert(v.get()).second) verify_fail(p, eqn, "variable defined twice");
  };
  for (auto* vars : {&p.constvars, &p.invars})
    for (auto& v : *vars)
      if (!v) throw Error("verify_program: program '" + p.name + "' has a null input or constant variable");
  for (auto& a : p.outvars)
    if (!a.is_literal() && !a.var()) throw Error("verify_program: program '" + p.name + "' has a null output variable");
  for (size_t i = 0; i < p.eqns.size(); ++i)
    if (std::string m = missing_part(p.eqns[i]); !m.empty())
      verify_fail(p, i, m);
  for (auto& v : p.constvars) define(v, 0);
  for (auto& v : p.invars) define(v, 0);
  for (size_t i = 0; i < p.consts.size(); ++i) {
    if (!p.consts[i].aval().same_type(p.constvars[i]->aval))
      throw Error("verify_program: constant " + std::to_string(i) + " has type " + p.consts[i].aval().to_string() +
                  " but its variable is " + p.constvars[i]->aval.to_string());
  }
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const Equation& e = p.eqns[i];
    std::vector<Aval> in_avals;
    for (auto& a : e.inputs) {
      if (!a.is_literal() && !defined.count(a.var().get()))
        verify_fail(p, i, e.prim->name + " uses a variable before it is defined");
      in_avals.push_back(a.aval());
    }
    std::vector<Aval> outs;
    try {
      outs = abstract_eval(*e.prim, in_avals, e.params);
    } catch (const Error& err) {
      verify_fail(p, i, std::string("abstract evaluation failed: ") + err.what());
    }
    if (outs.size() != e.outputs.size())
      verify_fail(p, i, e.prim->name + " produces " + std::to_string(outs.size()) + " outputs, the equation binds " +
                            std::to_string(e.outputs.size()));
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].same_type(e.outputs[k]->aval))
        verify_fail(p, i, e.prim->name + " output " + std::to_string(k) + " has type " + outs[k].to_string() +
                              " but is declared " + e.outputs[k]->aval.to_string());
      define(e.outputs[k], i);
    }
  }
  for (auto& a : p.outvars)
    if (!a.is_literal() && !defined.count(a.var().get()))
      throw Error("verify_program: an output of program '" + p.name + "' is never defined");
}

uint32_t Equation::effects() const {
  uint32_t e = prim->effects;
  for_each_program(params, [&](const Program& q) { e |= program_effects(q); });
  return e;
}

uint32_t program_effects(const Program& p) {
  uint32_t e = 0;
  for (auto& q : p.eqns) e |= q.effects();
  return e;
}

Program hoist_tracer_consts(const Program& p, std::vector<Array>& captured) {
  Program out = p;
  out.invars.clear();
  out.constvars.clear();
  out.consts.clear();
  for (size_t i = 0; i < p.constvars.size(); ++i) {
    if (p.consts[i].is_tracer()) {
      out.invars.push_back(p.constvars[i]);
      captured.push_back(p.consts[i]);
    } else {
      out.constvars.push_back(p.constvars[i]);
      out.consts.push_back(p.consts[i]);
    }
  }
  out.invars.insert(out.invars.end(), p.invars.begin(), p.invars.end());
  return out;
}

std::vector<Array> eval_program(const Program& p, std::span<const Array> args) {
  if (args.size() != p.invars.size())
    throw Error("eval_program: program '" + p.name + "' takes " + std::to_string(p.invars.size()) +
                " arguments, got " + std::to_string(args.size()));
  std::unordered_map<const VarNode*, Array> env;
  for (size_t i = 0; i < p.constvars.size(); ++i) env[p.constvars[i].get()] = p.consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[p.invars[i].get()] = args[i];
  auto read = [&](const Atom& a) -> Array {
    if (a.is_literal()) return detail::scalar_array(a.literal(), a.aval().weak_type);
    return env.at(a.var().get());
  };
  std::vector<Array> ins;
  for (auto& e : p.eqns) {
    ins.clear();
    for (auto& a : e.inputs) ins.push_back(read(a));
    auto outs = detail::bind(*e.prim, ins, e.params);
    for (size_t k = 0; k < outs.size(); ++k) env[e.outputs[k].get()] = outs[k];
  }
  std::vector<Array> outs;
  for (auto& a : p.outvars) outs.push_back(read(a));
  return outs;
}

bool has_spmd_equations(const Program& p) {
  for (const auto& e : p.eqns)
    if (e.prim->spmd || has_spmd_programs(e.params)) return true;
  return false;
}

bool has_spmd_programs(const Params& params) {
  bool any = false;
  for_each_program(params, [&](const Program& q) { any = any || has_spmd_equations(q); });
  return any;
}

}  // namespace tessel::ir
