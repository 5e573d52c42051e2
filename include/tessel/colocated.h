#pragma once
// Colocated functions and objects (seed colocated_python.md, docs/colocated.md): host code
// that runs on the hosts owning a set of devices, next to the data, instead of on the
// caller. Locally (one process, or every process of a multi-controller job) the code runs
// in this process; on the driver of a single-controller job it runs in the worker processes
// that own the devices, which is why such code is registered by name in every process
// (TESSEL_REGISTER_COLOCATED, TESSEL_REGISTER_COLOCATED_CLASS/_METHOD): C++ cannot ship code.
//
//   auto cpu = ts::colocated::colocated_cpu_devices(ts::devices());
//   auto f = ts::colocated::colocated(add_one);            // add_one(const ts::Array&)
//   ts::Array y = f(x);                                    // runs where x lives
//   auto g = f.specialize({.out_specs_fn = [](auto in) { return in; }});  // asynchronous calls
//   auto Adder = ts::colocated::colocated_class<AdderImpl>();
//   auto adder = Adder(1);                                 // nothing is created yet
//   ts::Array z = adder.call(&AdderImpl::add, x);          // created on x's host, then called
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <vector>

#include "tessel/array.h"
#include "tessel/error.h"
#include "tessel/sharding.h"
#include "tessel/tree_structure.h"

namespace tessel::colocated {

/// Shape, dtype and sharding of one array leaf of a colocated call's inputs or outputs
/// (jax.ShapeDtypeStruct with its sharding).
struct TESSEL_API Spec {
  Shape shape;
  DType dtype = DType::float32;
  Sharding sharding;
  Spec() = default;
  Spec(Shape shape, DType dtype, Sharding sharding)
      : shape(std::move(shape)), dtype(dtype), sharding(std::move(sharding)) {}
  /// The spec of a concrete array.
  static Spec of(const Array& a);
  bool operator==(const Spec& o) const { return shape == o.shape && dtype == o.dtype && sharding == o.sharding; }
  /// "f32[3] NamedSharding(...)"
  std::string to_string() const;
};
/// The specs of a call's array leaves, in order.
using Specs = std::vector<Spec>;
/// Computes the output specs from the input specs, on the caller (like tracing a jit): with
/// it, calls return their outputs at once and run asynchronously.
using OutSpecsFn = std::function<Specs(const Specs& in_specs)>;

/// Extra knowledge about a colocated function (the seed's `specialize` keywords); each field
/// may be given once over a chain of specialize calls.
struct Specialization {
  /// The specs every call's inputs must have (leaves in order); others are an error.
  std::optional<Specs> in_specs = {};
  /// Output specs from input specs; without it the first call of each input signature runs
  /// synchronously to learn them.
  OutSpecsFn out_specs_fn = {};
  /// The devices to run on: needed by a function that takes no arrays.
  std::optional<std::vector<Device>> devices = {};
};

/// The CPU devices on the hosts of `devices`, in the same order. tessel's devices are CPU
/// devices, so each device is its own colocated CPU device. ValueError for an empty handle.
TESSEL_API std::vector<Device> colocated_cpu_devices(const std::vector<Device>& devices);
/// A mesh of the same shape and axis names over the colocated CPU devices of `mesh`.
TESSEL_API Mesh colocated_cpu_devices(const Mesh& mesh);

namespace detail {

/// What a colocated function returned: the leaves of its result and the result's
/// tree_structure (a std::map's keys, a std::vector's size), from which the caller rebuilds
/// the result's C++ value.
struct Outputs {
  std::vector<Array> leaves;
  std::string structure;
};
/// Runs user code on this host: its result's leaves and structure.
using LocalThunk = std::function<Outputs()>;
/// Runs a registered function from the leaves of its arguments and each argument's
/// tree_structure: what a worker calls.
using RemoteFn = std::function<Outputs(std::span<const Array> leaves, std::span<const std::string> arg_structures)>;
/// Makes a registered class's object from its constructor arguments' bytes; calls one of
/// its registered methods.
using RemoteFactory = std::function<std::shared_ptr<void>(std::string_view ctor_bytes)>;
using RemoteMethod = std::function<Outputs(void* object, std::span<const Array> leaves,
                                           std::span<const std::string> arg_structures)>;

TESSEL_API bool register_function(const std::string& name, const void* address, RemoteFn fn);
TESSEL_API bool register_class(const std::string& name, std::type_index type, RemoteFactory factory);
TESSEL_API bool register_method(const std::string& method, std::type_index pm_type, std::string pm_bytes,
                                RemoteMethod fn);
/// The name a function (by address) / class (by type) / method (by member pointer) was
/// registered under; empty when it was not.
TESSEL_API std::string function_name(const void* address);
TESSEL_API std::string class_name(std::type_index type);
TESSEL_API std::string method_name(std::type_index pm_type, const std::string& pm_bytes);

/// One colocated object: made lazily on each host that first sees a call, kept until the
/// last wrapper handle goes (then freed on every host, asynchronously).
class TESSEL_API ObjectState {
 public:
  ObjectState(std::string class_display, std::string class_registered, std::function<std::shared_ptr<void>()> make,
              std::function<std::string()> encode_ctor);
  ~ObjectState();
  ObjectState(const ObjectState&) = delete;
  ObjectState& operator=(const ObjectState&) = delete;
  /// The object in this process, created on first use; the constructor's exception is kept
  /// and rethrown to every later caller.
  void* local_instance();
  const std::string& display() const { return display_; }
  const std::string& registered() const { return registered_; }
  uint64_t id() const { return id_; }
  /// The constructor arguments as bytes (throws when they cannot travel).
  std::string ctor_bytes() const { return encode_ctor_(); }
  /// Records that calls went to process p (it may hold an instance to free).
  void used_on(int p);

 private:
  std::string display_, registered_;
  std::function<std::shared_ptr<void>()> make_;
  std::function<std::string()> encode_ctor_;
  uint64_t id_;
  std::once_flag made_;
  std::shared_ptr<void> instance_;
  std::exception_ptr error_;
  std::mutex mu_;
  std::vector<int> remote_;
};

/// What a call runs: a function, or a method of an object.
struct Target {
  std::string display;             ///< for messages: "add_one", "Adder.add"
  std::string registered;          ///< registered function or "Class::method"; empty: local only
  std::shared_ptr<ObjectState> object;  ///< null for functions
};

struct OutSpecCache;

/// The state of one colocated callable: its specialization and its cache of output specs.
struct TESSEL_API Site {
  Site();
  ~Site();
  Target target;
  Specialization spec;
  std::mutex mu;
  /// A call's input specs and (sorted) device ids.
  struct Signature {
    Specs in;
    std::vector<int> devices;
    bool operator==(const Signature& o) const { return in == o.in && devices == o.devices; }
  };
  /// What is known of the outputs of one input signature: their specs, and the result's
  /// tree_structure once a call returned it (empty when out_specs_fn gave the specs).
  struct Known {
    Specs specs;
    std::string structure;
  };
  /// Known outputs by signature: bounded (colocated.cpp), emptied by clear_caches.
  std::unique_ptr<OutSpecCache> known;
  size_t discoveries = 0;  // under mu
  std::shared_ptr<Site> specialized(const Specialization& more) const;
};

/// What the C++ result type alone tells of the result's structure: all of it when the type
/// holds no std::vector or std::map (`fixed`), or, for std::vector<Array>, one element per
/// leaf. Otherwise (keys, sizes) the first call of each input signature learns it.
struct ResultType {
  std::string fixed;
  bool flat_vector = false;
};
template <class R> ResultType result_type() {
  if constexpr (std::is_void_v<R>) {
    return {"", false};
  } else if constexpr (std::is_same_v<R, std::vector<Array>>) {
    return {"", true};
  } else {
    std::string s = tree_structure(R{});
    return {s.find_first_of("[{") == std::string::npos ? s : "", false};
  }
}

/// Makes the thunk that runs a call's user code on this host; called only by a call that
/// runs here (one that runs on other processes alone makes no thunk). Non-owning: it points
/// at the caller's arguments, valid while `call` runs.
struct LocalMaker {
  const void* context;
  LocalThunk (*make)(const void* context);
  LocalThunk operator()() const { return make(context); }
};

/// Runs a colocated call: checks the inputs, finds the hosts, learns or computes the output
/// specs (and the result's structure), runs `local()` here and the registered target on
/// remote hosts; the output leaves and the result's structure.
TESSEL_API Outputs call(Site& site, std::span<const Array> leaves, std::span<const std::string> arg_structures,
                        LocalMaker local, const ResultType& result);
[[noreturn]] TESSEL_API void bad_rebuild(const std::string& what, size_t want, size_t got);

/// A value of tree type T with structure `structure` (tree_structure) and these leaves.
template <class T>
T tree_from_leaves(std::span<const Array> leaves, std::string_view structure, const std::string& what) {
  T out = tree_skeleton<T>(structure, what);
  std::vector<Array> v(leaves.begin(), leaves.end());
  const size_t want = tree_leaves(out).size();
  if (want != v.size()) bad_rebuild(what, want, v.size());
  size_t pos = 0;
  return tree_replace_leaves(out, v, pos);
}

template <class R> Outputs result_outputs(const R& r) {
  static_assert(TreeTraits<R>::is_tree, "a colocated function returns an Array, a tree of Arrays, or void");
  return {tree_leaves(r), tree_structure(r)};
}

template <class R> R rebuild_result(const Outputs& outs, const std::string& what) {
  if constexpr (std::is_void_v<R>) {
    (void)outs;
    (void)what;
  } else {
    return tree_from_leaves<R>(outs.leaves, outs.structure, what);
  }
}

/// Runs callable `f` on the typed arguments rebuilt from leaves and their structures (a
/// registered function or method, on a worker).
template <class... Args, class F>
Outputs invoke_from_leaves(F&& f, std::span<const Array> leaves, std::span<const std::string> arg_structures,
                           const std::string& what) {
  if (arg_structures.size() != sizeof...(Args))
    throw ValueError(what + ": the call passes " + std::to_string(arg_structures.size()) +
                     " arguments but the registered function takes " + std::to_string(sizeof...(Args)));
  size_t pos = 0, k = 0;
  auto next = [&]<class A>(std::type_identity<A>) -> A {
    if constexpr (std::is_same_v<A, Array>) {  // one leaf: nothing to rebuild
      if (arg_structures[k] == "*" && pos < leaves.size()) {
        ++k;
        return leaves[pos++];
      }
    }
    const std::string arg_what = what + " (argument " + std::to_string(k + 1) + ")";
    A value = tree_skeleton<A>(arg_structures[k++], arg_what);
    std::vector<Array> part;
    TreeTraits<A>::for_each(value, [&](const Array&) {
      if (pos >= leaves.size()) bad_rebuild(what + " (arguments)", pos + 1, leaves.size());
      part.push_back(leaves[pos++]);
    });
    size_t p = 0;
    return tree_replace_leaves(value, part, p);
  };
  (void)next;  // unused for a function without arguments
  // Braced initialization evaluates the arguments left to right.
  std::tuple<std::decay_t<Args>...> args{next(std::type_identity<std::decay_t<Args>>{})...};
  if (pos != leaves.size()) bad_rebuild(what + " (arguments)", pos, leaves.size());
  return std::apply(
      [&](auto&... a) {
        using R = std::invoke_result_t<F, std::decay_t<Args>&...>;
        if constexpr (std::is_void_v<R>) {
          f(a...);
          return Outputs{};
        } else {
          return result_outputs(f(a...));
        }
      },
      args);
}

/// Bytes of constructor arguments that can travel: arithmetic values, strings and vectors
/// of them.
template <class T> struct Codec {
  static constexpr bool supported = std::is_arithmetic_v<T>;
  static void write(std::string& out, const T& v) { out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
  static T read(std::string_view& in) {
    if (in.size() < sizeof(T)) throw ValueError("colocated: truncated constructor arguments");
    T v;
    std::memcpy(&v, in.data(), sizeof(T));
    in.remove_prefix(sizeof(T));
    return v;
  }
};
template <> struct Codec<std::string> {
  static constexpr bool supported = true;
  static void write(std::string& out, const std::string& v) {
    Codec<uint64_t>::write(out, v.size());
    out += v;
  }
  static std::string read(std::string_view& in) {
    uint64_t n = Codec<uint64_t>::read(in);
    if (in.size() < n) throw ValueError("colocated: truncated constructor arguments");
    std::string v(in.substr(0, n));
    in.remove_prefix(n);
    return v;
  }
};
template <class T> struct Codec<std::vector<T>> {
  static constexpr bool supported = Codec<T>::supported;
  static void write(std::string& out, const std::vector<T>& v) {
    Codec<uint64_t>::write(out, v.size());
    for (auto& e : v) Codec<T>::write(out, e);
  }
  static std::vector<T> read(std::string_view& in) {
    uint64_t n = Codec<uint64_t>::read(in);
    if (n > in.size()) throw ValueError("colocated: truncated constructor arguments");
    std::vector<T> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(Codec<T>::read(in));
    return v;
  }
};

template <class Tuple> std::string encode_ctor(const std::string& cls, const Tuple& args) {
  std::string out;
  std::apply(
      [&](const auto&... a) {
        auto one = [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (Codec<V>::supported) Codec<V>::write(out, v);
          else throw ValueError("colocated_class<" + cls + ">: a constructor argument of type " + typeid(V).name() +
                                " cannot be sent to another process; use numbers, strings or vectors of them");
        };
        (one(a), ...);
        (void)one;  // unused without arguments
      },
      args);
  return out;
}

template <class T, class... Args> std::shared_ptr<void> decode_and_make(std::string_view bytes) {
  std::tuple<std::decay_t<Args>...> args{Codec<std::decay_t<Args>>::read(bytes)...};
  return std::apply([](auto&... a) { return std::static_pointer_cast<void>(std::make_shared<T>(a...)); }, args);
}

template <class PM> std::string pm_bytes(PM pm) {
  return std::string(reinterpret_cast<const char*>(&pm), sizeof(PM));
}

template <class... Args> std::vector<std::string> arg_structures(const Args&... args) {
  static_assert((TreeTraits<std::decay_t<Args>>::is_tree && ...),
                "colocated calls take Arrays or trees of Arrays (std::vector, std::tuple, TESSEL_TREE structs, ...)");
  return {tree_structure(args)...};
}
template <class... Args> std::vector<Array> all_leaves(const Args&... args) {
  std::vector<Array> out;
  (TreeTraits<std::decay_t<Args>>::for_each(args, [&](const Array& a) { out.push_back(a); }), ...);
  return out;
}

}  // namespace detail

/// A colocated callable (colocated(fn), or a method of a colocated object): call it with
/// Arrays or trees of Arrays; it returns what `fn` returns, as arrays on the same devices.
template <class R, class... Params> class Function {
 public:
  using Invoke = std::function<R(const std::decay_t<Params>&...)>;
  /// Made by `colocated(fn)` and `Object::method`; a null site or an empty `invoke` is a
  /// ValueError (there is no empty Function).
  Function(std::shared_ptr<detail::Site> site, Invoke invoke) : site_(std::move(site)), invoke_(std::move(invoke)) {
    if (!site_ || !invoke_)
      throw ValueError("colocated::Function: no call site or function (null); make one with colocated(fn)");
  }

  /// Runs the function on the hosts of the arguments' devices (or of the specialized
  /// devices). Returns at once when the output specs are known (out_specs_fn, or learned
  /// by an earlier call with the same input specs); the first call of a new input signature
  /// without out_specs_fn runs synchronously to learn them.
  R operator()(const std::decay_t<Params>&... args) const {
    // The thunk of user code copies the function and the arguments: made only for a call
    // that runs on this host.
    struct Bound {
      const Invoke& invoke;
      std::tuple<const std::decay_t<Params>&...> args;
    } bound{invoke_, {args...}};
    const detail::LocalMaker local{&bound, [](const void* context) -> detail::LocalThunk {
      const Bound& b = *static_cast<const Bound*>(context);
      return std::apply(
          [&](const auto&... a) -> detail::LocalThunk {
            return [invoke = b.invoke, a...]() -> detail::Outputs {
              if constexpr (std::is_void_v<R>) {
                invoke(a...);
                return {};
              } else {
                return detail::result_outputs(invoke(a...));
              }
            };
          },
          b.args);
    }};
    static const detail::ResultType result = detail::result_type<R>();
    detail::Outputs outs;
    if constexpr ((std::is_same_v<std::decay_t<Params>, Array> && ...)) {
      // Array arguments only: their leaves and structures ("*") need no containers.
      const Array leaves[sizeof...(Params) ? sizeof...(Params) : 1] = {args...};
      static const std::vector<std::string> structures(sizeof...(Params), "*");
      outs = detail::call(*site_, std::span<const Array>(leaves, sizeof...(Params)), structures, local, result);
    } else {
      const std::vector<Array> leaves = detail::all_leaves(args...);
      const std::vector<std::string> structures = detail::arg_structures(args...);
      outs = detail::call(*site_, leaves, structures, local, result);
    }
    if constexpr (std::is_same_v<R, Array>) {
      if (outs.leaves.size() == 1 && outs.structure == "*") return std::move(outs.leaves[0]);
    }
    return detail::rebuild_result<R>(outs, site_->target.display + ": the result");
  }

  /// The same function with more knowledge (see Specialization). A field given before is a
  /// ValueError.
  Function specialize(const Specialization& more) const { return Function(site_->specialized(more), invoke_); }

  /// How many times output specs were learned by running the function synchronously.
  size_t out_spec_discoveries() const {
    std::lock_guard lock(site_->mu);
    return site_->discoveries;
  }

 private:
  std::shared_ptr<detail::Site> site_;
  Invoke invoke_;
};

namespace detail {
template <class R, class... P> Function<R, P...> make_function(R (*fn)(P...)) {
  auto site = std::make_shared<Site>();
  std::string name = function_name(reinterpret_cast<const void*>(fn));
  site->target = Target{name.empty() ? "colocated function" : name, name, nullptr};
  return Function<R, P...>(std::move(site), [fn](const std::decay_t<P>&... a) -> R { return fn(a...); });
}
template <class F, class R, class... P> Function<R, P...> make_function_of(F fn, R (F::*)(P...) const) {
  auto site = std::make_shared<Site>();
  site->target = Target{"colocated function", "", nullptr};
  return Function<R, P...>(std::move(site), [fn](const std::decay_t<P>&... a) -> R { return fn(a...); });
}
}  // namespace detail

/// Wraps a function for colocated calls. A free function registered with
/// TESSEL_REGISTER_COLOCATED runs on remote hosts too; any other callable (a lambda) runs on
/// local hosts only, and a call that needs a remote host is a ValueError naming it.
template <class R, class... P> Function<R, P...> colocated(R (*fn)(P...)) { return detail::make_function(fn); }
template <class F> auto colocated(F fn) -> decltype(detail::make_function_of(fn, &F::operator())) {
  return detail::make_function_of(fn, &F::operator());
}

/// A handle to an object of class T made on the hosts that see calls (colocated_class).
/// Copies share the object; when the last copy goes, the real objects are destroyed on every
/// host that made one, asynchronously.
template <class T> class Object {
 public:
  /// Made by `colocated_class<T>()(args...)`; a null state is a ValueError (there is no
  /// empty Object).
  explicit Object(std::shared_ptr<detail::ObjectState> state) : state_(std::move(state)) {
    if (!state_) throw ValueError("colocated::Object: no object state (null); make one with colocated_class<T>()(args...)");
  }

  /// A method as a colocated callable bound to this object (so it can be specialized).
  template <class R, class... P> Function<R, P...> method(R (T::*pm)(P...)) const {
    auto site = std::make_shared<detail::Site>();
    std::string name = detail::method_name(std::type_index(typeid(pm)), detail::pm_bytes(pm));
    site->target = detail::Target{state_->display() + "." + (name.empty() ? "method" : name.substr(name.find("::") + 2)),
                                  name, state_};
    auto state = state_;
    return Function<R, P...>(std::move(site), [state, pm](const std::decay_t<P>&... a) -> R {
      return (static_cast<T*>(state->local_instance())->*pm)(a...);
    });
  }
  /// Calls method `pm` with `args` on the hosts of the arguments' devices (making the
  /// object there first if needed).
  template <class R, class... P, class... A> R call(R (T::*pm)(P...), const A&... args) const {
    return method(pm)(args...);
  }

 private:
  std::shared_ptr<detail::ObjectState> state_;
};

/// colocated_class<T>(): calling it records constructor arguments and returns an Object<T>;
/// nothing is constructed until a method is called.
template <class T> class Class {
 public:
  template <class... A> Object<T> operator()(A&&... args) const {
    std::string reg = detail::class_name(std::type_index(typeid(T)));
    std::string display = reg.empty() ? typeid(T).name() : reg;
    auto stored = std::make_shared<std::tuple<std::decay_t<A>...>>(std::forward<A>(args)...);
    auto make = [stored]() -> std::shared_ptr<void> {
      return std::apply([](const auto&... a) { return std::static_pointer_cast<void>(std::make_shared<T>(a...)); },
                        *stored);
    };
    auto encode = [stored, display] { return detail::encode_ctor(display, *stored); };
    return Object<T>(std::make_shared<detail::ObjectState>(display, reg, make, encode));
  }
};
template <class T> Class<T> colocated_class() { return Class<T>(); }

}  // namespace tessel::colocated

/// Registers free function `fn` (by its name) for colocated calls on remote hosts; put it at
/// namespace scope in a file linked into every process.
#define TESSEL_REGISTER_COLOCATED(fn)                                                                    \
  [[maybe_unused]] static const bool tessel_colocated_fn_##fn = ::tessel::colocated::detail::register_function( \
      #fn, reinterpret_cast<const void*>(&fn), [](std::span<const ::tessel::Array> leaves,                   \
                                                  std::span<const std::string> structures) {                 \
        return ::tessel::colocated::detail::call_registered(&fn, leaves, structures, #fn);                   \
      })

/// Registers class T, made on remote hosts from constructor arguments of types `...`.
#define TESSEL_REGISTER_COLOCATED_CLASS(T, ...)                                                         \
  [[maybe_unused]] static const bool tessel_colocated_class_##T = ::tessel::colocated::detail::register_class( \
      #T, std::type_index(typeid(T)), &::tessel::colocated::detail::decode_and_make<T, ##__VA_ARGS__>)

/// Registers method `m` of class T for remote calls.
#define TESSEL_REGISTER_COLOCATED_METHOD(T, m)                                                          \
  [[maybe_unused]] static const bool tessel_colocated_method_##T##_##m =                              \
      ::tessel::colocated::detail::register_method(                                                    \
          #T "::" #m, std::type_index(typeid(&T::m)), ::tessel::colocated::detail::pm_bytes(&T::m), \
          [](void* obj, std::span<const ::tessel::Array> leaves, std::span<const std::string> structures) {\
            return ::tessel::colocated::detail::call_registered_method(static_cast<T*>(obj), &T::m, leaves, structures, \
                                                                       #T "::" #m);                     \
          })

namespace tessel::colocated::detail {
template <class R, class... P>
Outputs call_registered(R (*fn)(P...), std::span<const Array> leaves, std::span<const std::string> structures,
                        const std::string& what) {
  return invoke_from_leaves<P...>([fn](auto&... a) { return fn(a...); }, leaves, structures, what);
}
template <class T, class R, class... P>
Outputs call_registered_method(T* obj, R (T::*pm)(P...), std::span<const Array> leaves,
                               std::span<const std::string> structures, const std::string& what) {
  return invoke_from_leaves<P...>([obj, pm](auto&... a) { return (obj->*pm)(a...); }, leaves, structures, what);
}
}  // namespace tessel::colocated::detail
