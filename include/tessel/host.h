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
#include "tessel/tree.h"

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

/// Options of call.
struct CallOptions {
  /// The result's shape and dtype; the callback's result is checked against it.
  ShapeDtype result_shape;
  /// Pass the device the values come from as the function's second argument.
  bool call_with_device = false;
  int device_index = 0;
  std::string name = "call";
};

namespace detail {

/// Type-erased callbacks on the leaves of a tree (host copies of the device values).
using LeafTap = std::function<void(std::vector<Array> leaves, const Transforms& transforms, const Device& device)>;
using LeafCall = std::function<Array(std::vector<Array> leaves, const Device& device)>;

/// How a synchronous callback may be treated: `pure` ones may be removed when their
/// result is unused; `ordered` ones keep program order with the device's other effects.
enum class CallKind { kPure, kUnordered, kOrdered };

/// Binds the tap primitive on `leaves` (eagerly: queues it on their device).
TESSEL_API void tap_leaves(LeafTap fn, const std::vector<Array>& leaves, const std::string& name, bool with_device,
                           int device_index);
/// Binds the call primitive: `fn`'s result, checked against `result`.
TESSEL_API Array call_leaves(LeafCall fn, const std::vector<Array>& leaves, const ShapeDtype& result,
                             const std::string& name, bool with_device, int device_index, CallKind kind);

/// id_print's value format: tuples `( a b )`, lists `[ a b ]`, maps `{ k=a }`, arrays as
/// NumPy prints them (summarized past `threshold` elements).
TESSEL_API std::string format_array(const Array& a, int64_t threshold);
template <class T> void format_value(std::ostream& os, const T& x, int64_t threshold);
template <class T> struct IsVector : std::false_type {};
template <class T, class A> struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T> struct IsStdArray : std::false_type {};
template <class T, size_t N> struct IsStdArray<std::array<T, N>> : std::true_type {};
template <class T> struct IsTuple : std::false_type {};
template <class... Ts> struct IsTuple<std::tuple<Ts...>> : std::true_type {};
template <class A, class B> struct IsTuple<std::pair<A, B>> : std::true_type {};
template <class T> struct IsMap : std::false_type {};
template <class T> struct IsMap<std::map<std::string, T>> : std::true_type {};

template <class Seq> void format_sequence(std::ostream& os, const Seq& xs, const char* open, const char* close,
                                          int64_t threshold) {
  os << open;
  for (const auto& x : xs) {
    os << ' ';
    format_value(os, x, threshold);
  }
  os << ' ' << close;
}

template <class T> void format_value(std::ostream& os, const T& x, int64_t threshold) {
  if constexpr (std::is_same_v<T, Array>) {
    os << format_array(x, threshold);
  } else if constexpr (IsTuple<T>::value) {
    os << '(';
    std::apply([&](const auto&... e) { ((os << ' ', format_value(os, e, threshold)), ...); }, x);
    os << " )";
  } else if constexpr (IsVector<T>::value || IsStdArray<T>::value) {
    format_sequence(os, x, "[", "]", threshold);
  } else if constexpr (IsMap<T>::value) {
    os << '{';
    for (const auto& [k, v] : x) {
      os << ' ' << k << '=';
      format_value(os, v, threshold);
    }
    os << " }";
  } else if constexpr (TreeTraits<T>::is_tree) {  // a TESSEL_TREE struct: its leaves, as a tuple
    os << '(';
    TreeTraits<T>::for_each(x, [&](const Array& a) { os << ' ' << format_array(a, threshold); });
    os << " )";
  } else {
    os << x;
  }
}

/// Prints id_print's header line and value to `os` (one write, under a lock shared by all
/// id_prints, so that lines of different devices do not interleave).
TESSEL_API void emit(std::ostream* os, const std::string& text);
TESSEL_API std::string print_header(const PrintOptions& opts, const Transforms& transforms, const Device* device);

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
/// (`( 3. 9. )` for a tuple of two scalars). Returns `arg`.
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

/// Calls `fn(arg)` — or, with `call_with_device`, `fn(arg, device)` — on the host and
/// returns its result into the computation. Synchronous; runs after the device's earlier
/// callbacks. The result must have `result_shape`'s shape and dtype: otherwise, or when
/// `fn` throws, the computation fails and reading its result throws a tessel::Error naming
/// the callback (the process goes on). Under vmap, `fn` is called once per batch element
/// (sequentially); under jvp/grad it is an error (define the derivative with custom_jvp or
/// custom_vjp around the call).
template <class T, class F> Array call(F fn, const T& arg, CallOptions opts) {
  constexpr bool takes_device = std::is_invocable_v<F&, const T&, const Device&>;
  static_assert(takes_device || std::is_invocable_v<F&, const T&>,
                "call: the function must take (const T& arg[, const Device&]) and return an Array");
  if (opts.call_with_device && !takes_device)
    throw ValueError("call('" + opts.name + "'): call_with_device is set but the function takes no Device; give it "
                     "a second parameter (const ts::Device&)");
  detail::LeafCall erased = [fn = std::move(fn), skeleton = detail::skeleton_of(arg)](std::vector<Array> leaves,
                                                                                      const Device& device) mutable {
    const T value = detail::rebuild(skeleton, leaves);
    if constexpr (takes_device) return Array(fn(value, device));
    else return Array(fn(value));
  };
  return detail::call_leaves(std::move(erased), tree_leaves(arg), opts.result_shape, opts.name, opts.call_with_device,
                             opts.device_index, detail::CallKind::kOrdered);
}

/// Waits until every callback issued so far on every local device has run (device work
/// enqueued before the call included). Throws CallbackException when an asynchronous
/// callback threw since the last barrier_wait. Also runs at exit, printing such an error.
TESSEL_API void barrier_wait(const std::string& logging_name = "");

}  // namespace tessel::host

namespace tessel {

/// jax.pure_callback: `fn(args)` on the host, returning an Array of `result`'s shape and
/// dtype. Pure: removed when its result is unused, and may run any number of times.
template <class F, class T> Array pure_callback(F fn, const ShapeDtype& result, const T& args) {
  host::detail::LeafCall erased = [fn = std::move(fn), skeleton = host::detail::skeleton_of(args)](
                                      std::vector<Array> leaves, const Device&) mutable {
    return Array(fn(host::detail::rebuild(skeleton, leaves)));
  };
  return host::detail::call_leaves(std::move(erased), tree_leaves(args), result, "pure_callback", false, 0,
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
/// result (of `result`'s shape and dtype); runs even when the result is unused.
template <class F, class T>
Array io_callback(F fn, const ShapeDtype& result, const T& args, IoCallbackOptions opts = {}) {
  host::detail::LeafCall erased = [fn = std::move(fn), skeleton = host::detail::skeleton_of(args)](
                                      std::vector<Array> leaves, const Device&) mutable {
    return Array(fn(host::detail::rebuild(skeleton, leaves)));
  };
  return host::detail::call_leaves(std::move(erased), tree_leaves(args), result, "io_callback", false, 0,
                                   opts.ordered ? host::detail::CallKind::kOrdered
                                                : host::detail::CallKind::kUnordered);
}

namespace debug {

namespace detail {
/// `fmt` with each `{}` replaced by the next value's text (NumPy style); extra `{}` stay.
TESSEL_API std::string format(const std::string& fmt, const std::vector<Array>& values);
}  // namespace detail

/// jax.debug.print: prints `fmt` with each `{}` replaced by the next argument's value, from
/// inside jit, vmap (each batched value whole), grad (primal values) and control flow.
/// Asynchronous, like id_tap; barrier_wait waits for it.
template <class... Args> void print(const std::string& fmt, const Args&... args) {
  static_assert((std::is_convertible_v<const Args&, Array> && ...), "debug::print: the values must be Arrays");
  host::id_tap(
      [fmt](const std::vector<Array>& values, const host::Transforms&) {
        host::detail::emit(nullptr, detail::format(fmt, values) + "\n");
      },
      std::vector<Array>{Array(args)...}, {.name = "debug.print"});
}

/// jax.debug.callback: calls `fn(args...)` on the host for its side effects, asynchronously.
template <class F, class... Args> void callback(F fn, const Args&... args) {
  static_assert((std::is_convertible_v<const Args&, Array> && ...), "debug::callback: the values must be Arrays");
  host::id_tap(
      [fn = std::move(fn)](const std::vector<Array>& values, const host::Transforms&) mutable {
        [&]<size_t... I>(std::index_sequence<I...>) { fn(values[I]...); }(std::index_sequence_for<Args...>{});
      },
      std::vector<Array>{Array(args)...}, {.name = "debug.callback"});
}

}  // namespace debug
}  // namespace tessel
