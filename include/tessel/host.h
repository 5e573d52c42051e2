#pragma once
// Host callbacks (seed: host_callback.zh.md; docs/host_callbacks.md): compiled device code
// calling C++ functions on the host — to print and debug (id_print, debug::print), to log
// or write results while a long jitted loop runs (id_tap, io_callback), and to use a host
// library inside device code (call, pure_callback). Usable eagerly and under jit, grad,
// vmap, checkpoint, control flow and shard_map.
//
// Asynchronous callbacks (id_tap, id_print, debug::*) run on a receiver thread per device,
// in the order the device issued them; the device continues once it handed the values
// over. Synchronous ones (call, pure_callback, io_callback) run on the device's stream and
// return their result into the computation. Either way a throwing callback never aborts the
// process: a synchronous one fails the computation (reading its result throws), an
// asynchronous one is reported by the next barrier_wait.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/device.h"
#include "tessel/error.h"
#include "tessel/export.h"
#include "tessel/tree_structure.h"

namespace tessel::host {

/// Thrown by barrier_wait when an asynchronous callback threw since the last barrier; the
/// message carries the last exception's.
class TESSEL_API CallbackException : public Error {
 public:
  using Error::Error;
};

/// One transformation the tapped values went through (the seed's `transforms` entries).
/// vmap adds {"batch", batch_dims}: per leaf of the tapped value, the batched dimension,
/// or nullopt for a leaf that is not batched. jvp and grad add none: only primal values
/// reach a callback.
struct TESSEL_API Transform {
  std::string name;
  std::vector<std::optional<int64_t>> batch_dims;
  /// Python's spelling, as the seed prints it: `('batch', {'batch_dims': (0, None)})`.
  std::string to_string() const;
  bool operator==(const Transform& o) const { return name == o.name && batch_dims == o.batch_dims; }
};
using Transforms = std::vector<Transform>;
/// `[('batch', {'batch_dims': (0,)})]`; `[]` when empty.
TESSEL_API std::string to_string(const Transforms& transforms);

/// Options of id_tap.
struct TapOptions {
  /// Pass the device the values come from as the tap function's third argument.
  bool tap_with_device = false;
  /// Under a sharded jit, the operand is gathered whole to this device of the mesh, which
  /// makes the one call (per-device code, shard_map, taps once per device instead).
  int device_index = 0;
  /// Names the callback in errors, barrier_wait's report and TESSEL_LOG=debug lines.
  std::string name = "id_tap";
};

/// Options of id_print.
struct PrintOptions {
  /// Printed in the header as `what: ...` (omitted when empty).
  std::string what = {};
  /// Where to print (default std::cout); must outlive the callback's run (barrier_wait).
  std::ostream* output_stream = nullptr;
  bool tap_with_device = false;
  int device_index = 0;
  /// Arrays with more elements are summarized with `...`, as NumPy does.
  int64_t threshold = 1024;
  /// More `key: value` pairs for the header (the seed's extra keyword arguments).
  std::map<std::string, std::string> kwargs = {};
};

/// Options of call. `S` is the type of `result_shape`: a ShapeDtype (the call returns an
/// Array), a tree of them — std::tuple, std::pair, std::vector, std::array,
/// std::map<std::string, ...> — (the call returns the same tree of Arrays), or `ts::none`
/// (the callback returns nothing, nor does the call). Name the type for anything but a
/// ShapeDtype: `host::CallOptions{.result_shape = std::tuple{s1, s2}}`.
template <class S = ShapeDtype> struct CallOptions {
  /// The result's shapes and dtypes (JAX's result_shape pytree); the callback's result is
  /// checked against them, its tree structure included.
  S result_shape;
  /// Pass the device the values come from as the function's second argument.
  bool call_with_device = false;
  int device_index = 0;
  std::string name = "call";
};

namespace detail {

using tessel::detail::IsStdArray;
using tessel::detail::IsStdVector;
using tessel::detail::IsStringMap;
using tessel::detail::IsTupleLike;

/// `like` with its leaves replaced by empty arrays: what a callback keeps to rebuild the
/// tree from the leaves it is handed (without holding the traced values).
template <class T> T skeleton_of(const T& like) {
  std::vector<Array> empty(tree_leaves(like).size());
  size_t pos = 0;
  return tree_replace_leaves(like, empty, pos);
}
template <class T> T rebuild(const T& skeleton, const std::vector<Array>& leaves) {
  size_t pos = 0;
  return tree_replace_leaves(skeleton, leaves, pos);
}

/// What a synchronous callback returned: its leaves and its tree_structure.
struct CallResult {
  std::vector<Array> leaves;
  std::string structure;
};

/// Type-erased callbacks on the leaves of a tree (host copies of the device values).
using LeafTap = std::function<void(std::vector<Array> leaves, const Transforms& transforms, const Device& device)>;
using LeafCall = std::function<CallResult(std::vector<Array> leaves, const Device& device)>;

/// How a synchronous callback may be treated: `pure` ones may be removed when their
/// result is unused; `ordered` ones keep program order with the device's other effects.
enum class CallKind { kPure, kUnordered, kOrdered };

/// Binds the tap primitive on `leaves` (eagerly: queues it on their device). A
/// `per_example` tap (debug::print, debug::callback) runs once per example under vmap, as
/// jax.debug does; the others once with the batched values and a "batch" transform.
TESSEL_API void tap_leaves(LeafTap fn, const std::vector<Array>& leaves, const std::string& name, bool with_device,
                           int device_index, bool per_example = false);
/// Binds the call primitive: the leaves of `fn`'s result, checked against `results` (the
/// avals of the leaves) and `structure` (their tree_structure).
TESSEL_API std::vector<Array> call_leaves(LeafCall fn, const std::vector<Array>& leaves,
                                          const std::vector<ShapeDtype>& results, const std::string& structure,
                                          const std::string& name, bool with_device, int device_index, CallKind kind);

/// The tree of Arrays that a tree of ShapeDtype describes (void for ts::none).
template <class S> struct ResultTree;
template <> struct ResultTree<ShapeDtype> {
  using type = Array;
};
template <> struct ResultTree<std::nullopt_t> {
  using type = void;
};
template <class... S> struct ResultTree<std::tuple<S...>> {
  using type = std::tuple<typename ResultTree<S>::type...>;
};
template <class A, class B> struct ResultTree<std::pair<A, B>> {
  using type = std::pair<typename ResultTree<A>::type, typename ResultTree<B>::type>;
};
template <class S> struct ResultTree<std::vector<S>> {
  using type = std::vector<typename ResultTree<S>::type>;
};
template <class S, size_t N> struct ResultTree<std::array<S, N>> {
  using type = std::array<typename ResultTree<S>::type, N>;
};
template <class S> struct ResultTree<std::map<std::string, S>> {
  using type = std::map<std::string, typename ResultTree<S>::type>;
};
template <class S> using result_tree_t = typename ResultTree<S>::type;

/// The leaves of a tree of ShapeDtype, and the tree of empty Arrays of its structure.
template <class S> void result_avals(const S& s, std::vector<ShapeDtype>& out) {
  if constexpr (std::is_same_v<S, ShapeDtype>) out.push_back(s);
  else if constexpr (std::is_same_v<S, std::nullopt_t>) (void)s;
  else if constexpr (IsStringMap<S>::value)
    for (const auto& [k, e] : s) result_avals(e, out);
  else if constexpr (IsTupleLike<S>::value) std::apply([&](const auto&... e) { (result_avals(e, out), ...); }, s);
  else
    for (const auto& e : s) result_avals(e, out);
}
template <class S> result_tree_t<S> result_skeleton(const S& s) {
  if constexpr (std::is_same_v<S, ShapeDtype>) {
    return Array();
  } else if constexpr (IsStringMap<S>::value) {
    result_tree_t<S> out;
    for (const auto& [k, e] : s) out.emplace(k, result_skeleton(e));
    return out;
  } else if constexpr (IsTupleLike<S>::value) {
    return std::apply([](const auto&... e) { return result_tree_t<S>{result_skeleton(e)...}; }, s);
  } else if constexpr (IsStdArray<S>::value) {
    result_tree_t<S> out;
    for (size_t i = 0; i < s.size(); ++i) out[i] = result_skeleton(s[i]);
    return out;
  } else {
    result_tree_t<S> out;
    for (const auto& e : s) out.push_back(result_skeleton(e));
    return out;
  }
}

/// Binds a synchronous callback `fn` on `arg` with results described by `result_shapes`
/// (one definition for call, pure_callback and io_callback): the tree of results, or
/// nothing for ts::none.
template <class S, class T, class F>
result_tree_t<S> bind_call(F fn, const T& arg, const S& result_shapes, const std::string& name, bool with_device,
                           int device_index, CallKind kind) {
  constexpr bool takes_device = std::is_invocable_v<F&, const T&, const Device&>;
  using R = typename std::conditional_t<takes_device, std::invoke_result<F&, const T&, const Device&>,
                                        std::invoke_result<F&, const T&>>::type;
  constexpr bool none = std::is_same_v<S, std::nullopt_t>;
  static_assert(!none || std::is_void_v<R>,
                "a host callback whose result_shape is ts::none returns void (JAX's None)");
  static_assert(none || !std::is_void_v<R>,
                "a host callback returns its results: an Array or a tree of them, as result_shape describes");
  std::vector<ShapeDtype> avals;
  result_avals(result_shapes, avals);
  std::string structure;
  if constexpr (!none) structure = tree_structure(result_skeleton(result_shapes));
  LeafCall erased = [fn = std::move(fn), skeleton = skeleton_of(arg)](std::vector<Array> leaves,
                                                                    const Device& device) mutable -> CallResult {
    const T value = rebuild(skeleton, leaves);
    auto run = [&]() -> decltype(auto) {
      if constexpr (takes_device) return fn(value, device);
      else return fn(value);
    };
    if constexpr (std::is_void_v<R>) {
      run();
      return {};
    } else if constexpr (TreeTraits<std::decay_t<R>>::is_tree) {
      const auto r = run();
      return {tree_leaves(r), tree_structure(r)};
    } else {  // a value that converts to an Array
      return {{Array(run())}, "*"};
    }
  };
  std::vector<Array> outs =
      call_leaves(std::move(erased), tree_leaves(arg), avals, structure, name, with_device, device_index, kind);
  if constexpr (!none) {
    size_t pos = 0;
    return tree_replace_leaves(result_skeleton(result_shapes), outs, pos);
  }
}

/// id_print's value format: tuples `( a b )`, lists `[ a b ]`, maps `{ k=a }`, arrays as
/// NumPy prints them (summarized past `threshold` elements).
TESSEL_API std::string format_array(const Array& a, int64_t threshold);
template <class T> void format_value(std::ostream& os, const T& x, int64_t threshold);

// The old host_callback's layout: `( a b )`, and `(  )` when empty (its pretty printer
// joins the elements with spaces between "( " and " )").
template <class Seq> void format_sequence(std::ostream& os, const Seq& xs, const char* open, const char* close,
                                          int64_t threshold) {
  os << open << ' ';
  bool first = true;
  for (const auto& x : xs) {
    if (!first) os << ' ';
    first = false;
    format_value(os, x, threshold);
  }
  os << ' ' << close;
}

template <class T> void format_value(std::ostream& os, const T& x, int64_t threshold) {
  if constexpr (std::is_same_v<T, Array>) {
    os << format_array(x, threshold);
  } else if constexpr (IsTupleLike<T>::value) {
    os << "( ";
    bool first = true;
    std::apply([&](const auto&... e) { ((os << (first ? "" : " "), first = false, format_value(os, e, threshold)), ...); },
               x);
    os << " )";
  } else if constexpr (IsStdVector<T>::value || IsStdArray<T>::value) {
    format_sequence(os, x, "[", "]", threshold);
  } else if constexpr (IsStringMap<T>::value) {
    os << "{ ";
    bool first = true;
    for (const auto& [k, v] : x) {
      os << (first ? "" : " ") << k << '=';
      first = false;
      format_value(os, v, threshold);
    }
    os << " }";
  } else if constexpr (TreeTraits<T>::is_tree) {  // a TESSEL_TREE struct: its leaves, as a tuple
    format_sequence(os, tree_leaves(x), "(", ")", threshold);
  } else {
    os << x;
  }
}

/// Prints id_print's header line and value to `os` (one write, under a lock shared by all
/// id_prints, so that lines of different devices do not interleave).
TESSEL_API void emit(std::ostream* os, const std::string& text);
TESSEL_API std::string print_header(const PrintOptions& opts, const Transforms& transforms, const Device* device);

}  // namespace detail

/// Hands `arg` (an Array or a tree of them) to `tap_fn(arg, transforms)` — or, with
/// `tap_with_device`, `tap_fn(arg, transforms, device)` — on the host, and returns `arg`.
/// Asynchronous: the device continues once the values are handed over; the tap runs on the
/// device's receiver thread, after the device's earlier callbacks. Fires even when the
/// result is unused. Under jvp and grad only primal values reach the tap, once; under vmap
/// one batched call, with a "batch" transform.
template <class T, class F> T id_tap(F tap_fn, const T& arg, TapOptions opts = {}) {
  constexpr bool takes_device = std::is_invocable_v<F&, const T&, const Transforms&, const Device&>;
  static_assert(takes_device || std::is_invocable_v<F&, const T&, const Transforms&>,
                "id_tap: the tap function must take (const T& arg, const Transforms&[, const Device&])");
  if (opts.tap_with_device && !takes_device)
    throw ValueError("id_tap('" + opts.name + "'): tap_with_device is set but the tap function takes no Device; "
                     "give it a third parameter (const ts::Device&)");
  detail::LeafTap erased = [fn = std::move(tap_fn), skeleton = detail::skeleton_of(arg)](
                               std::vector<Array> leaves, const Transforms& transforms, const Device& device) mutable {
    const T value = detail::rebuild(skeleton, leaves);
    if constexpr (takes_device) fn(value, transforms, device);
    else fn(value, transforms);
  };
  detail::tap_leaves(std::move(erased), tree_leaves(arg), opts.name, opts.tap_with_device, opts.device_index);
  return arg;
}

/// id_tap returning `result` instead of `arg` (the seed's `result=` keyword).
template <class T, class R, class F> R id_tap(F tap_fn, const T& arg, const R& result, TapOptions opts = {}) {
  id_tap(std::move(tap_fn), arg, std::move(opts));
  return result;
}

/// A tap that prints `arg`: a header line of sorted `key: value` pairs (device, what,
/// transforms, the extra kwargs) when there are any, then the value on its own line
/// (`( 3. 9. )` for a tuple of two scalars, `(  )` for an empty one). Returns `arg`.
template <class T> T id_print(const T& arg, PrintOptions opts = {}) {
  auto print = [opts](const T& value, const Transforms& transforms, const Device& device) {
    std::ostringstream os;
    const std::string header = detail::print_header(opts, transforms, opts.tap_with_device ? &device : nullptr);
    if (!header.empty()) os << header << '\n';
    detail::format_value(os, value, opts.threshold);
    os << '\n';
    detail::emit(opts.output_stream, os.str());
  };
  return id_tap(print, arg, {.tap_with_device = opts.tap_with_device, .device_index = opts.device_index,
                             .name = "id_print"});
}

/// id_print returning `result` instead of `arg` (the seed's `result=` keyword; a third
/// argument, as for id_tap): prints `arg` and returns `result`, e.g. to print a value
/// inside a function whose output is something else.
template <class T, class R> R id_print(const T& arg, const R& result, PrintOptions opts = {}) {
  id_print(arg, std::move(opts));
  return result;
}

/// Calls `fn(arg)` — or, with `call_with_device`, `fn(arg, device)` — on the host and
/// returns its result into the computation. Synchronous; runs after the device's earlier
/// callbacks. The result must have `result_shape`'s tree structure, shapes and dtypes (an
/// Array for a ShapeDtype, a tree of Arrays for a tree of them; `fn` returns void and the
/// call nothing for ts::none): otherwise, or when `fn` throws, the computation fails and
/// reading its result throws a tessel::Error naming the callback (the process goes on).
/// Under vmap, `fn` is called once per batch element (sequentially); under jvp/grad it is
/// an error (define the derivative with custom_jvp or custom_vjp around the call).
template <class T, class F, class S = ShapeDtype>
detail::result_tree_t<S> call(F fn, const T& arg, CallOptions<S> opts) {
  constexpr bool takes_device = std::is_invocable_v<F&, const T&, const Device&>;
  static_assert(takes_device || std::is_invocable_v<F&, const T&>,
                "call: the function must take (const T& arg[, const Device&]) and return an Array or a tree of them");
  if (opts.call_with_device && !takes_device)
    throw ValueError("call('" + opts.name + "'): call_with_device is set but the function takes no Device; give it "
                     "a second parameter (const ts::Device&)");
  return detail::bind_call(std::move(fn), arg, opts.result_shape, opts.name, opts.call_with_device,
                           opts.device_index, detail::CallKind::kOrdered);
}

/// Waits until every callback issued so far on every local device has run (device work
/// enqueued before the call included). Throws CallbackException when an asynchronous
/// callback threw since the last barrier_wait. Also runs at exit, printing such an error.
TESSEL_API void barrier_wait(const std::string& logging_name = "");

}  // namespace tessel::host

namespace tessel {

/// jax.pure_callback: `fn(args)` on the host, returning results of `result`'s shapes and
/// dtypes — an Array for a ShapeDtype, the same tree of Arrays for a tree of them
/// (std::tuple, std::pair, std::vector, std::array, std::map<std::string, ...>). Pure:
/// removed when its results are unused, and may run any number of times.
template <class F, class S, class T> host::detail::result_tree_t<S> pure_callback(F fn, const S& result, const T& args) {
  static_assert(!std::is_same_v<S, std::nullopt_t>,
                "pure_callback: a pure callback without results would be removed; use io_callback for side effects");
  return host::detail::bind_call(std::move(fn), args, result, "pure_callback", false, 0,
                                 host::detail::CallKind::kPure);
}

/// Options of io_callback.
struct IoCallbackOptions {
  /// Keep program order with the device's other ordered effects across jit calls (a
  /// device runs its work in order, so unordered callbacks keep it too, but may be
  /// reordered by future schedulers).
  bool ordered = false;
};

/// jax.experimental.io_callback: `fn(args)` on the host for its side effects and its
/// results (of `result`'s shapes and dtypes, a tree as for pure_callback; with ts::none,
/// `fn` returns void and so does io_callback); runs even when the results are unused.
template <class F, class S, class T>
host::detail::result_tree_t<S> io_callback(F fn, const S& result, const T& args, IoCallbackOptions opts = {}) {
  return host::detail::bind_call(std::move(fn), args, result, "io_callback", false, 0,
                                 opts.ordered ? host::detail::CallKind::kOrdered
                                              : host::detail::CallKind::kUnordered);
}

namespace debug {

namespace detail {
/// `fmt` with each `{}` replaced by the next value's text (NumPy style); extra `{}` stay.
TESSEL_API std::string format(const std::string& fmt, const std::vector<Array>& values);
}  // namespace detail

/// jax.debug.print: prints `fmt` with each `{}` replaced by the next argument's value, from
/// inside jit, vmap (once per example, as JAX does: `x: 0`, `x: 1`, ...), grad (primal
/// values) and control flow. Asynchronous, like id_tap; barrier_wait waits for it.
template <class... Args> void print(const std::string& fmt, const Args&... args) {
  static_assert((std::is_convertible_v<const Args&, Array> && ...), "debug::print: the values must be Arrays");
  host::detail::tap_leaves(
      [fmt](std::vector<Array> values, const host::Transforms&, const Device&) {
        host::detail::emit(nullptr, detail::format(fmt, values) + "\n");
      },
      std::vector<Array>{Array(args)...}, "debug.print", false, 0, /*per_example=*/true);
}

/// jax.debug.callback: calls `fn(args...)` on the host for its side effects, asynchronously;
/// under vmap once per example, with that example's values.
template <class F, class... Args> void callback(F fn, const Args&... args) {
  static_assert((std::is_convertible_v<const Args&, Array> && ...), "debug::callback: the values must be Arrays");
  host::detail::tap_leaves(
      [fn = std::move(fn)](std::vector<Array> values, const host::Transforms&, const Device&) mutable {
        [&]<size_t... I>(std::index_sequence<I...>) { fn(values[I]...); }(std::index_sequence_for<Args...>{});
      },
      std::vector<Array>{Array(args)...}, "debug.callback", false, 0, /*per_example=*/true);
}

}  // namespace debug
}  // namespace tessel
