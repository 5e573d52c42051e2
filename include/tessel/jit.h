#pragma once
// jit: trace a C++ function into a program once per input signature, simplify and compile
// it, and run the executable on later calls. Also make_program (like jax.make_jaxpr).
// clear_caches and cache_stats (tessel/cache.h) empty and inspect jit's caches.
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

#include "tessel/array.h"
#include "tessel/cache.h"
#include "tessel/sharding.h"
#include "tessel/tree.h"

namespace tessel {

namespace detail {
struct JitEntry;
struct ProgramHolder;
using FlatFn = std::function<std::vector<Array>(std::span<const Array>)>;
}  // namespace detail

/// A traced program, printable like a jaxpr:
/// `{ lambda ; a:f32[3]. let b:f32[3] = sin a ... in (b,) }`.
class TESSEL_API Program {
 public:
  Program() = default;
  explicit Program(std::shared_ptr<const detail::ProgramHolder> p) : p_(std::move(p)) {}
  /// The printed program ("<no program>" for an empty one).
  std::string to_string() const;
  /// Number of equations (top level). An empty (default-constructed) Program throws
  /// ValueError here and in primitive_names.
  size_t num_equations() const;
  /// Names of the primitives of the top-level equations, in order.
  std::vector<std::string> primitive_names() const;
  const std::shared_ptr<const detail::ProgramHolder>& holder() const { return p_; }

 private:
  std::shared_ptr<const detail::ProgramHolder> p_;
};
TESSEL_API std::ostream& operator<<(std::ostream& os, const Program& p);

/// Options of jit (designated initializers: `ts::jit(f, {.static_argnums = {1}})`).
struct JitOptions {
  /// Arguments that are compile-time constants: the cache is keyed on their value (they need
  /// == and a copy). Arguments whose C++ type holds no Array are static automatically;
  /// listing them is allowed. Listing an Array argument is an error.
  std::vector<int> static_argnums = {};
  /// Arguments whose buffers the computation may reuse for intermediates and outputs
  /// (`state = step(state)` without a second copy of the state). A donated argument's
  /// arrays are invalidated by the call: any later use throws a ValueError. Donation is
  /// ignored under transformations (grad, vmap, an enclosing jit) and for an array passed
  /// more than once in the same call. Listing a static argument, or one that holds no
  /// arrays, is a `ValueError`; an index outside the call's arguments an `IndexError`.
  std::vector<int> donate_argnums = {};
  /// Name shown in printed programs; default "fn".
  std::string name = {};
  /// Per argument (static ones included, left unset): the layout the program wants it in
  /// (every leaf of a tree argument). An argument laid out otherwise is resharded inside
  /// the program; unset: the argument's own layout (single-device arrays: as propagation
  /// decides). Empty: all unset. See docs/sharding.md.
  std::vector<std::optional<Sharding>> in_shardings = {};
  /// Per output leaf (or one entry for all): the layout of the results. Unset: as
  /// propagation decides.
  std::vector<std::optional<Sharding>> out_shardings = {};
};

namespace detail {
/// Traces `fn` on tracers of `in_avals` and compiles the simplified program. `donated[k]`
/// is the argument number of leaf k when that argument is donated, else -1 (empty: none).
TESSEL_API std::shared_ptr<JitEntry> jit_compile(const FlatFn& fn, std::span<const Aval> in_avals,
                                                 const std::string& name, std::vector<int> donated = {});
/// True when the entry closed over tracers of an enclosing transformation (not cacheable).
TESSEL_API bool jit_entry_captures_tracers(const JitEntry& e);
/// Calls the compiled program: runs it, or records it into an active trace.
TESSEL_API std::vector<Array> jit_call(const JitEntry& e, std::span<const Array> args);
/// The program as traced / after simplification / as compiled.
TESSEL_API Program jit_traced_program(const JitEntry& e);
TESSEL_API Program jit_lowered_program(const JitEntry& e);
/// The compiled program for these arguments (the per-device program when partitioned).
TESSEL_API std::string jit_compiled_text(const JitEntry& e, std::span<const Array> args);
/// Builds what a call with `args` runs (fusion, generated kernels, the partitioned
/// per-device programs) so that the first call does no code generation.
TESSEL_API void jit_build(const JitEntry& e, std::span<const Array> args);
/// Why in_shardings/out_shardings cannot be used as given (wrong count).
[[noreturn]] TESSEL_API void jit_bad_shardings(const std::string& name, const char* which, size_t given, size_t expected);
TESSEL_API Program make_program_flat(const FlatFn& fn, std::span<const Aval> in_avals, const std::string& name);
[[noreturn]] TESSEL_API void jit_bad_static_argnum(const std::string& name, int argnum, int nargs, bool is_array);
/// Why argument `argnum` cannot be donated: out of range, static, or holding no arrays.
[[noreturn]] TESSEL_API void jit_bad_donate_argnum(const std::string& name, int argnum, int nargs, bool is_static);

template <class T> constexpr bool is_tree_v = TreeTraits<std::decay_t<T>>::is_tree;

/// A copy of one static argument, compared with == when looking up the jit cache.
class StaticValue {
 public:
  virtual ~StaticValue() = default;
  virtual bool equals(const StaticValue& other) const = 0;
};
template <class T> class StaticValueOf final : public StaticValue {
 public:
  explicit StaticValueOf(const T& v) : v_(v) {}
  bool equals(const StaticValue& other) const override {
    auto* o = dynamic_cast<const StaticValueOf<T>*>(&other);
    return o && o->v_ == v_;
  }

 private:
  T v_;
};
using StaticKey = std::vector<std::shared_ptr<const StaticValue>>;
inline bool same_static_key(const StaticKey& a, const StaticKey& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i]->equals(*b[i])) return false;
  return true;
}

/// The traces of one jitted function by signature: the C++ types of the arguments, the
/// values of static ones and the avals of the Array leaves. Bounded (least recently used
/// signatures are traced again), and emptied by clear_caches.
class TESSEL_API TraceCache {
 public:
  struct Hit {
    std::shared_ptr<JitEntry> jit;
    std::shared_ptr<const void> out_sample;  // a result of the function's type (its tree structure)
  };
  TraceCache();
  ~TraceCache();
  TraceCache(const TraceCache&) = delete;
  TraceCache& operator=(const TraceCache&) = delete;
  std::optional<Hit> find(const std::type_info& arg_types, const StaticKey& statics, std::span<const Array> leaves);
  /// Adds a trace; returns the one now cached (another thread's, if it was first).
  Hit insert(const std::type_info& arg_types, StaticKey statics, std::vector<Aval> avals, Hit hit);
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Flattens jit arguments: leaves of tree arguments go to `leaves` (and the number of the
/// argument each comes from to `leaf_args`, when given); copies of static arguments go to
/// `statics` (when given).
template <class Tuple, size_t... I>
void flatten_args(const Tuple& args, const std::vector<int>& static_argnums, std::vector<Array>& leaves,
                  StaticKey* statics, std::index_sequence<I...>, std::vector<int>* leaf_args = nullptr) {
  auto one = [&](const auto& a, int i) {
    using A = std::decay_t<decltype(a)>;
    bool listed = std::find(static_argnums.begin(), static_argnums.end(), i) != static_argnums.end();
    if constexpr (is_tree_v<A>) {
      if (listed) jit_bad_static_argnum("jit", i, int(sizeof...(I)), true);
      TreeTraits<A>::for_each(a, [&](const Array& x) {
        leaves.push_back(x);
        if (leaf_args) leaf_args->push_back(i);
      });
    } else if (statics) {
      statics->push_back(std::make_shared<StaticValueOf<A>>(a));
    }
  };
  (one(std::get<I>(args), int(I)), ...);
}

/// Rebuilds the arguments with their leaves replaced (tracers during tracing).
template <class Tuple, size_t... I>
Tuple replace_arg_leaves(const Tuple& args, const std::vector<Array>& leaves, std::index_sequence<I...>) {
  size_t pos = 0;
  auto one = [&](const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (is_tree_v<A>) return tree_replace_leaves(a, leaves, pos);
    else return a;
  };
  return Tuple{one(std::get<I>(args))...};
}
}  // namespace detail

/// Returned by `jit(f).lower(args...)`: the simplified program for those arguments.
class TESSEL_API Lowered {
 public:
  /// Made by `Jitted::lower`; a null entry is a ValueError (there is no empty Lowered).
  explicit Lowered(std::shared_ptr<detail::JitEntry> e, std::vector<Array> args = {})
      : e_(std::move(e)), args_(std::move(args)) {
    if (!e_) throw ValueError("Lowered: no jit entry (null); get a Lowered from jit(f).lower(args...)");
  }
  /// The program that will be compiled (after DCE, CSE and constant folding).
  std::string as_text() const { return detail::jit_lowered_program(*e_).to_string(); }
  Program program() const { return detail::jit_lowered_program(*e_); }
  /// Builds the executable now (fusion, code generation, partitioning): later calls of the
  /// jitted function with the same signature only run it.
  class Compiled compile() const;

 private:
  std::shared_ptr<detail::JitEntry> e_;
  std::vector<Array> args_;
};

/// The executable for one input signature; call it with the flat list of Array leaves.
class TESSEL_API Compiled {
 public:
  /// Made by `Lowered::compile`; a null entry is a ValueError (there is no empty Compiled).
  explicit Compiled(std::shared_ptr<detail::JitEntry> e, std::vector<Array> args = {})
      : e_(std::move(e)), args_(std::move(args)) {
    if (!e_) throw ValueError("Compiled: no jit entry (null); get a Compiled from jit(f).lower(args...).compile()");
  }
  /// What runs on each device: the executable's program with its buffer plan; for a
  /// partitioned program, the per-device program with its collectives.
  std::string as_text() const { return detail::jit_compiled_text(*e_, args_); }
  std::vector<Array> operator()(const std::vector<Array>& leaves) const { return detail::jit_call(*e_, leaves); }

 private:
  std::shared_ptr<detail::JitEntry> e_;
  std::vector<Array> args_;
};

inline Compiled Lowered::compile() const {
  detail::jit_build(*e_, args_);
  return Compiled(e_, args_);
}

/// A jitted function (see `jit`). Copies share one cache.
template <class F> class Jitted {
 public:
  Jitted(F f, JitOptions opts) : state_(std::make_shared<State>(std::move(f), std::move(opts))) {
    if (state_->opts.name.empty()) state_->opts.name = "fn";
  }

  /// Traces on the first call for each signature (avals of the Array leaves, values of static
  /// arguments), then runs the cached executable.
  template <class... Args> auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<const F&, const Args&...>;
    static_assert(is_tree_v<R>, "jit: the function must return an Array or a tree of Arrays");
    std::vector<Array> leaves;
    auto [entry, sample] = lookup(leaves, args...);
    std::vector<Array> outs = detail::jit_call(*entry, leaves);
    size_t pos = 0;
    return tree_replace_leaves(*static_cast<const R*>(sample.get()), outs, pos);
  }
  /// The program for these arguments, simplified (print it with `.as_text()`).
  template <class... Args> Lowered lower(const Args&... args) const {
    std::vector<Array> leaves;
    auto entry = lookup(leaves, args...).first;
    return Lowered(entry, std::move(leaves));
  }
  const JitOptions& options() const { return state_->opts; }
  /// Number of signatures cached now (each new shape/dtype/static value traces; at most
  /// 256 are kept, and clear_caches empties the cache).
  size_t cache_size() const { return state_->traces.size(); }

 private:
  template <class T> static constexpr bool is_tree_v = detail::is_tree_v<T>;
  struct State {
    State(F f_, JitOptions o) : f(std::move(f_)), opts(std::move(o)) {}
    F f;
    JitOptions opts;
    detail::TraceCache traces;
  };

  template <class... Args>
  std::pair<std::shared_ptr<detail::JitEntry>, std::shared_ptr<const void>> lookup(std::vector<Array>& leaves,
                                                                                  const Args&... args) const {
    using R = std::invoke_result_t<const F&, const Args&...>;
    detail::StaticKey statics;
    auto tup = std::forward_as_tuple(args...);
    const JitOptions& opts = state_->opts;
    constexpr int nargs = int(sizeof...(Args));
    for (int i : opts.static_argnums)
      if (i < 0 || i >= nargs) detail::jit_bad_static_argnum(opts.name, i, nargs, false);
    constexpr bool holds_arrays[] = {is_tree_v<std::decay_t<Args>>..., false};
    for (int i : opts.donate_argnums) {
      if (i < 0 || i >= nargs) detail::jit_bad_donate_argnum(opts.name, i, nargs, false);
      bool is_static = std::find(opts.static_argnums.begin(), opts.static_argnums.end(), i) != opts.static_argnums.end();
      if (is_static || !holds_arrays[i]) detail::jit_bad_donate_argnum(opts.name, i, nargs, is_static);
    }
    if (!opts.in_shardings.empty() && opts.in_shardings.size() != size_t(nargs))
      detail::jit_bad_shardings(opts.name, "in_shardings", opts.in_shardings.size(), size_t(nargs));
    std::vector<int> leaf_args;
    bool need_leaf_args = !opts.donate_argnums.empty() || !opts.in_shardings.empty();
    detail::flatten_args(tup, opts.static_argnums, leaves, &statics, std::index_sequence_for<Args...>{},
                         need_leaf_args ? &leaf_args : nullptr);
    const std::type_info& types = typeid(std::tuple<std::decay_t<Args>...>);
    if (auto hit = state_->traces.find(types, statics, leaves)) return {std::move(hit->jit), std::move(hit->out_sample)};
    std::vector<Aval> avals;
    for (auto& l : leaves) avals.push_back(Aval(l.shape(), l.dtype(), l.weak_type()));
    using Tuple = std::tuple<std::decay_t<Args>...>;
    Tuple values{args...};
    auto sample = std::make_shared<R>();
    detail::FlatFn flat = [&](std::span<const Array> tracers) {
      std::vector<Array> tv(tracers.begin(), tracers.end());
      for (size_t k = 0; k < tv.size() && !opts.in_shardings.empty(); ++k)
        if (const auto& s = opts.in_shardings[size_t(leaf_args[k])]) tv[k] = with_sharding_constraint(tv[k], *s);
      Tuple traced = detail::replace_arg_leaves(values, tv, std::index_sequence_for<Args...>{});
      *sample = std::apply(state_->f, traced);
      std::vector<Array> outs = tree_leaves(*sample);
      const auto& os = opts.out_shardings;
      if (!os.empty() && os.size() != 1 && os.size() != outs.size())
        detail::jit_bad_shardings(opts.name, "out_shardings", os.size(), outs.size());
      for (size_t j = 0; j < outs.size() && !os.empty(); ++j)
        if (const auto& s = os[os.size() == 1 ? 0 : j]) outs[j] = with_sharding_constraint(outs[j], *s);
      return outs;
    };
    std::vector<int> donated;
    const auto& don = opts.donate_argnums;
    for (int a : leaf_args) donated.push_back(std::find(don.begin(), don.end(), a) != don.end() ? a : -1);
    auto jit = detail::jit_compile(flat, avals, opts.name, std::move(donated));
    if (detail::jit_entry_captures_tracers(*jit)) return {jit, sample};
    auto hit = state_->traces.insert(types, std::move(statics), std::move(avals), {jit, sample});
    return {std::move(hit.jit), std::move(hit.out_sample)};
  }

  std::shared_ptr<State> state_;
};

/// Compiles `f` (a callable taking Arrays, trees of Arrays and static values, returning an
/// Array or a tree of Arrays). The cache lives in the returned object and its copies: a
/// lambda's captures are part of it, and captured arrays are baked in as constants when a
/// signature is first traced (capture by value; a by-reference capture that later changes
/// is not seen by cached signatures, as in JAX).
template <class F> Jitted<std::decay_t<F>> jit(F&& f, JitOptions opts = {}) {
  return Jitted<std::decay_t<F>>(std::forward<F>(f), std::move(opts));
}

/// Traces `f` on `args` and returns its program, unsimplified (like jax.make_jaxpr).
template <class F, class... Args> Program make_program(const F& f, const Args&... args) {
  using Tuple = std::tuple<std::decay_t<Args>...>;
  Tuple values{args...};
  std::vector<Array> leaves;
  detail::flatten_args(values, {}, leaves, nullptr, std::index_sequence_for<Args...>{});
  std::vector<Aval> avals;
  for (auto& l : leaves) avals.push_back(Aval(l.shape(), l.dtype(), l.weak_type()));
  detail::FlatFn flat = [&](std::span<const Array> tracers) {
    std::vector<Array> tv(tracers.begin(), tracers.end());
    Tuple traced = detail::replace_arg_leaves(values, tv, std::index_sequence_for<Args...>{});
    return tree_leaves(std::apply(f, traced));
  };
  return detail::make_program_flat(flat, avals, "fn");
}

}  // namespace tessel
