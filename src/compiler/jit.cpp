// jit: tracing, closure conversion, simplification, compilation and calls.
#include <mutex>
#include <sstream>

#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/jit_entry.h"
#include "compiler/jit_primitive.h"
#include "compiler/passes.h"
#include "core/cache.h"
#include "core/log.h"
#include "ir/trace.h"
#include "transforms/call_util.h"
#include "tessel/jit.h"

namespace tessel {
namespace detail {

namespace {

// Executables of programs reached through call primitives and control-flow bodies, keyed by
// program identity (a program freed and another made at its address never share an entry)
// and whether constants were folded. Never destroyed: kernels still queued at exit may call
// programs (core/lifetime.h).
constexpr size_t kCallExecutableCapacity = 256;
struct CallKey {
  IdentityKey<ir::Program> program;
  bool fold;
  bool operator==(const CallKey&) const = default;
};
struct HashCallKey {  // as executable_for computes it
  size_t operator()(const CallKey& k) const { return k.program.hash() * 2 + size_t(k.fold); }
};
using CallCache = Cache<CallKey, std::shared_ptr<compiler::Executable>, HashCallKey>;

std::shared_ptr<compiler::Executable> executable_for(const ir::ProgramRef& program, bool fold) {
  static auto* cache = new CallCache("jit.call_executables", kCallExecutableCapacity);
  // Looked up without making a key (control-flow kernels come here once per iteration).
  const size_t hash = std::hash<const void*>()(program.get()) * 2 + size_t(fold);
  if (auto exe = cache->find_if(hash, [&](const CallKey& k) { return k.fold == fold && k.program.matches(program); }))
    return *exe;
  // Entries of programs that are gone would only wait for eviction.
  cache->erase_if([](const CallKey& k, const auto&) { return k.program.expired(); });
  auto exe = std::make_shared<compiler::Executable>(
      std::make_shared<const ir::Program>(compiler::fuse(compiler::simplify(*program, fold))));
  return cache->insert(hash, CallKey{IdentityKey<ir::Program>(program), fold}, std::move(exe));
}

}  // namespace

std::shared_ptr<compiler::Executable> call_executable(const ir::ProgramRef& program) {
  return executable_for(program, /*fold=*/false);
}

void run_program_sync(const ir::ProgramRef& program, std::span<const void* const> ins, std::span<void* const> outs,
                      DeviceImpl* device) {
  executable_for(program, /*fold=*/false)->run_sync(ins, outs, device);
}

namespace {

std::vector<Aval> jit_abstract_eval(std::span<const Aval> ins, const ir::Params& params) {
  const auto& p = *params.get<ir::ProgramRef>("program");
  if (ins.size() != p.invars.size())
    throw ValueError("jit: '" + p.name + "' takes " + std::to_string(p.invars.size()) + " arrays, got " +
                     std::to_string(ins.size()));
  for (size_t i = 0; i < ins.size(); ++i)
    if (!ins[i].same_type(p.invars[i]->aval))
      throw ShapeError("jit: argument " + std::to_string(i) + " of '" + p.name + "' has type " + ins[i].to_string() +
                       ", expected " + p.invars[i]->aval.to_string());
  return p.out_avals();
}

// Arrays of one device each (src/sharding/dispatch.cpp sends the others to the partitioner).
std::vector<Array> jit_eager(std::span<const Array> ins, const ir::Params& params) {
  return executable_for(params.get<ir::ProgramRef>("program"), /*fold=*/true)->run(ins);
}

std::vector<Array> jit_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                    const ir::Params& params) {
  return call_partial_eval(self, trace, ins, params, nullptr, [&](const ir::ProgramRef& known, std::span<const Array> xs) {
    return bind(self, xs, with_program(params, known));
  });
}

}  // namespace



std::shared_ptr<JitEntry> jit_compile(const FlatFn& fn, std::span<const Aval> in_avals, const std::string& name,
                                      std::vector<int> donated) {
  auto e = std::make_shared<JitEntry>();
  e->traced = std::make_shared<const ir::Program>(trace_to_program(fn, in_avals, name));
  ir::verify_program(*e->traced);
  e->closed = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(*e->traced, e->captured_tracers));
  e->lowered = std::make_shared<const ir::Program>(compiler::simplify(*e->closed));
  // Captured tracers lead the inputs; they are never donated (and a program that has them
  // only runs under its transformation, where donation is ignored).
  if (!donated.empty()) donated.insert(donated.begin(), e->captured_tracers.size(), -1);
  e->donated = std::move(donated);
  e->partitions = ir::has_spmd_equations(*e->lowered);
  TESSEL_DEBUG_LOG("jit compile '" + name + "': traced " + std::to_string(e->traced->eqns.size()) +
                   " equations, " + std::to_string(e->lowered->eqns.size()) + " after simplification");
  return e;
}

bool jit_entry_captures_tracers(const JitEntry& e) { return !e.captured_tracers.empty(); }

Program jit_traced_program(const JitEntry& e) {
  return Program(std::make_shared<const ProgramHolder>(ProgramHolder{e.traced}));
}
Program jit_lowered_program(const JitEntry& e) {
  return Program(std::make_shared<const ProgramHolder>(ProgramHolder{e.lowered}));
}
void jit_bad_shardings(const std::string& name, const char* which, size_t given, size_t expected) {
  throw ValueError(name + ": " + which + " has " + std::to_string(given) + " entries but " + std::to_string(expected) +
                   (std::string(which) == "in_shardings" ? " arguments are passed" : " results are returned") +
                   "; give one (optional) sharding per " +
                   (std::string(which) == "in_shardings" ? "argument (unset for static ones)" : "result, or one for all"));
}

Program make_program_flat(const FlatFn& fn, std::span<const Aval> in_avals, const std::string& name) {
  auto p = std::make_shared<const ir::Program>(trace_to_program(fn, in_avals, name));
  ir::verify_program(*p);
  return Program(std::make_shared<const ProgramHolder>(ProgramHolder{p}));
}

void jit_bad_static_argnum(const std::string& name, int argnum, int nargs, bool is_array) {
  if (is_array)
    throw ValueError(name + ": static_argnums lists argument " + std::to_string(argnum) +
                     ", which holds Arrays; arrays cannot be static. Pass a C++ value (int, double, "
                     "string, ...) for a compile-time constant, or drop it from static_argnums");
  throw IndexError(name + ": static_argnums lists argument " + std::to_string(argnum) + " but the function is called with " +
                   std::to_string(nargs) + " arguments");
}

void jit_bad_donate_argnum(const std::string& name, int argnum, int nargs, bool is_static) {
  if (argnum < 0 || argnum >= nargs)
    throw IndexError(name + ": donate_argnums lists argument " + std::to_string(argnum) +
                     " but the function is called with " + std::to_string(nargs) + " arguments");
  throw ValueError(name + ": donate_argnums lists argument " + std::to_string(argnum) + ", which " +
                   (is_static ? "is static (in static_argnums)" : "holds no Arrays") +
                   "; only arguments holding arrays can be donated. Drop it from donate_argnums");
}

}  // namespace detail

namespace compiler {
const ir::Primitive& jit_primitive() {
  static const ir::Primitive& p = ir::register_primitive({
      .name = "jit",
      .abstract_eval = detail::jit_abstract_eval,
      .eager_impl = detail::jit_eager,
      .jvp_with_primals = detail::call_jvp,
      .transpose = detail::call_transpose,
      .batch = detail::call_batch,
      .partial_eval = detail::jit_partial_eval,
      .inlinable_call = true,
  });
  return p;
}
[[maybe_unused]] static const ir::Primitive& registered_jit = jit_primitive();
}  // namespace compiler

namespace compiler {
const ir::Program& program_of(const Program& p) {
  if (!p.holder()) throw ValueError("program_of: the Program is empty (default-constructed)");
  return *p.holder()->program;
}
}  // namespace compiler

std::string Program::to_string() const { return p_ ? ir::print_program(*p_->program) : "<no program>"; }
namespace {
const ir::Program& nonempty(const std::shared_ptr<const detail::ProgramHolder>& p, const char* accessor) {
  if (!p)
    throw ValueError(std::string("Program::") + accessor +
                     ": this Program is empty (default-constructed); get one from make_program(f, args...) or "
                     "jit(f).lower(args...).program()");
  return *p->program;
}
}  // namespace

size_t Program::num_equations() const { return nonempty(p_, "num_equations").eqns.size(); }
std::vector<std::string> Program::primitive_names() const {
  std::vector<std::string> r;
  for (auto& e : nonempty(p_, "primitive_names").eqns) r.push_back(e.prim->name);
  return r;
}
std::ostream& operator<<(std::ostream& os, const Program& p) { return os << p.to_string(); }

}  // namespace tessel
