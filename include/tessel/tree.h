#pragma once
// Trees of arrays (JAX's pytrees, for C++ types): how transformations find the Arrays inside
// arguments and results. Supported: Array, std::vector, std::array, std::tuple, std::pair,
// std::map<std::string, T>, and structs registered with TESSEL_TREE. Any other type is a
// leaf-free "static" value (jit keys its cache on it).
#include <array>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/array.h"

namespace tessel {

/// Specialize (or use TESSEL_TREE) to make a type a tree. `for_each(x, f)` calls f on every
/// Array leaf in a fixed order; `map(x, f)` does the same with mutable leaves.
template <class T, class Enable = void> struct TreeTraits {
  static constexpr bool is_tree = false;
};

template <> struct TreeTraits<Array> {
  static constexpr bool is_tree = true;
  template <class F> static void for_each(const Array& x, F&& f) { f(x); }
  template <class F> static void map(Array& x, F&& f) { f(x); }
};

template <class T> struct TreeTraits<std::vector<T>, std::enable_if_t<TreeTraits<T>::is_tree>> {
  static constexpr bool is_tree = true;
  template <class F> static void for_each(const std::vector<T>& x, F&& f) {
    for (auto& e : x) TreeTraits<T>::for_each(e, f);
  }
  template <class F> static void map(std::vector<T>& x, F&& f) {
    for (auto& e : x) TreeTraits<T>::map(e, f);
  }
};

template <class T, size_t N> struct TreeTraits<std::array<T, N>, std::enable_if_t<TreeTraits<T>::is_tree>> {
  static constexpr bool is_tree = true;
  template <class F> static void for_each(const std::array<T, N>& x, F&& f) {
    for (auto& e : x) TreeTraits<T>::for_each(e, f);
  }
  template <class F> static void map(std::array<T, N>& x, F&& f) {
    for (auto& e : x) TreeTraits<T>::map(e, f);
  }
};

template <class T> struct TreeTraits<std::map<std::string, T>, std::enable_if_t<TreeTraits<T>::is_tree>> {
  static constexpr bool is_tree = true;
  template <class F> static void for_each(const std::map<std::string, T>& x, F&& f) {
    for (auto& [k, e] : x) TreeTraits<T>::for_each(e, f);
  }
  template <class F> static void map(std::map<std::string, T>& x, F&& f) {
    for (auto& [k, e] : x) TreeTraits<T>::map(e, f);
  }
};

namespace detail {
/// Applies f to the leaves of a tree member; static members are skipped.
template <class T, class F> void tree_for_each_member(const T& x, F& f) {
  if constexpr (TreeTraits<T>::is_tree) TreeTraits<T>::for_each(x, f);
}
template <class T, class F> void tree_map_member(T& x, F& f) {
  if constexpr (TreeTraits<T>::is_tree) TreeTraits<T>::map(x, f);
}
}  // namespace detail

template <class... Ts> struct TreeTraits<std::tuple<Ts...>> {
  static constexpr bool is_tree = (TreeTraits<Ts>::is_tree || ...);
  template <class F> static void for_each(const std::tuple<Ts...>& x, F&& f) {
    std::apply([&](const auto&... e) { (detail::tree_for_each_member(e, f), ...); }, x);
  }
  template <class F> static void map(std::tuple<Ts...>& x, F&& f) {
    std::apply([&](auto&... e) { (detail::tree_map_member(e, f), ...); }, x);
  }
};

template <class A, class B> struct TreeTraits<std::pair<A, B>> {
  static constexpr bool is_tree = TreeTraits<A>::is_tree || TreeTraits<B>::is_tree;
  template <class F> static void for_each(const std::pair<A, B>& x, F&& f) {
    detail::tree_for_each_member(x.first, f);
    detail::tree_for_each_member(x.second, f);
  }
  template <class F> static void map(std::pair<A, B>& x, F&& f) {
    detail::tree_map_member(x.first, f);
    detail::tree_map_member(x.second, f);
  }
};

/// The Array leaves of a tree, in order.
template <class T> std::vector<Array> tree_leaves(const T& x) {
  std::vector<Array> out;
  if constexpr (TreeTraits<T>::is_tree) TreeTraits<T>::for_each(x, [&](const Array& a) { out.push_back(a); });
  return out;
}

/// A copy of `like` whose leaves are replaced, in order, by `leaves[pos...]`; advances pos.
template <class T> T tree_replace_leaves(const T& like, const std::vector<Array>& leaves, size_t& pos) {
  T out = like;
  if constexpr (TreeTraits<T>::is_tree) TreeTraits<T>::map(out, [&](Array& a) { a = leaves.at(pos++); });
  return out;
}

}  // namespace tessel

#define TESSEL_TREE_FE_(field) ::tessel::detail::tree_for_each_member(x.field, f);
#define TESSEL_TREE_MAP_(field) ::tessel::detail::tree_map_member(x.field, f);
#define TESSEL_TREE_EXPAND_(m, ...) TESSEL_TREE_FOR_EACH_(m, __VA_ARGS__)
// Up to 12 fields.
#define TESSEL_TREE_FOR_EACH_(m, ...) TESSEL_TREE_PICK_(__VA_ARGS__, TESSEL_TREE_12_, TESSEL_TREE_11_, TESSEL_TREE_10_, \
  TESSEL_TREE_9_, TESSEL_TREE_8_, TESSEL_TREE_7_, TESSEL_TREE_6_, TESSEL_TREE_5_, TESSEL_TREE_4_, TESSEL_TREE_3_,       \
  TESSEL_TREE_2_, TESSEL_TREE_1_)(m, __VA_ARGS__)
#define TESSEL_TREE_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define TESSEL_TREE_1_(m, a) m(a)
#define TESSEL_TREE_2_(m, a, ...) m(a) TESSEL_TREE_1_(m, __VA_ARGS__)
#define TESSEL_TREE_3_(m, a, ...) m(a) TESSEL_TREE_2_(m, __VA_ARGS__)
#define TESSEL_TREE_4_(m, a, ...) m(a) TESSEL_TREE_3_(m, __VA_ARGS__)
#define TESSEL_TREE_5_(m, a, ...) m(a) TESSEL_TREE_4_(m, __VA_ARGS__)
#define TESSEL_TREE_6_(m, a, ...) m(a) TESSEL_TREE_5_(m, __VA_ARGS__)
#define TESSEL_TREE_7_(m, a, ...) m(a) TESSEL_TREE_6_(m, __VA_ARGS__)
#define TESSEL_TREE_8_(m, a, ...) m(a) TESSEL_TREE_7_(m, __VA_ARGS__)
#define TESSEL_TREE_9_(m, a, ...) m(a) TESSEL_TREE_8_(m, __VA_ARGS__)
#define TESSEL_TREE_10_(m, a, ...) m(a) TESSEL_TREE_9_(m, __VA_ARGS__)
#define TESSEL_TREE_11_(m, a, ...) m(a) TESSEL_TREE_10_(m, __VA_ARGS__)
#define TESSEL_TREE_12_(m, a, ...) m(a) TESSEL_TREE_11_(m, __VA_ARGS__)

/// Makes a struct a tree: `struct State { ts::Array h, u; int step; };
/// TESSEL_TREE(State, h, u)` (at namespace scope, outside any namespace). Unlisted members are
/// copied along unchanged.
#define TESSEL_TREE(Type, ...)                                                  \
  template <> struct tessel::TreeTraits<Type> {                                 \
    static constexpr bool is_tree = true;                                       \
    template <class F> static void for_each(const Type& x, F&& f) {             \
      TESSEL_TREE_EXPAND_(TESSEL_TREE_FE_, __VA_ARGS__)                         \
    }                                                                           \
    template <class F> static void map(Type& x, F&& f) {                        \
      TESSEL_TREE_EXPAND_(TESSEL_TREE_MAP_, __VA_ARGS__)                        \
    }                                                                           \
  };
