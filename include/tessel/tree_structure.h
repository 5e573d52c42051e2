#pragma once
// The structure of a tree of arrays (JAX's treedef) as text, and trees rebuilt from it: what
// lets a host callback check its result's tree against result_shape, and a colocated call
// rebuild a result or argument holding std::map keys or std::vector sizes in another
// process or before the function ran (include/tessel/host.h, include/tessel/colocated.h).
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/export.h"
#include "tessel/tree.h"

namespace tessel {

namespace detail {
template <class T> struct IsStdVector : std::false_type {};
template <class T, class A> struct IsStdVector<std::vector<T, A>> : std::true_type {};
template <class T> struct IsStdArray : std::false_type {};
template <class T, size_t N> struct IsStdArray<std::array<T, N>> : std::true_type {};
template <class T> struct IsStringMap : std::false_type {};
template <class T> struct IsStringMap<std::map<std::string, T>> : std::true_type {};
template <class T> struct IsTupleLike : std::false_type {};
template <class... Ts> struct IsTupleLike<std::tuple<Ts...>> : std::true_type {};
template <class A, class B> struct IsTupleLike<std::pair<A, B>> : std::true_type {};
[[noreturn]] TESSEL_API void bad_tree_structure(const std::string& what, std::string_view structure, size_t pos,
                                                const std::string& expected);
}  // namespace detail

/// The structure of tree `x` (JAX's treedef) as text that can travel between processes:
/// `*` per leaf, `(...)` for tuples, pairs and std::arrays, `[...]` for vectors,
/// `{3:key...}` for maps (keys length-prefixed), `_` for a static member, and `<n>` for a
/// TESSEL_TREE struct (or other TreeTraits type) of n leaves, whose structure is its default
/// value's (a vector or map member keeps its default size and keys). Two trees that flatten and rebuild alike
/// have equal structures: `std::tuple{a, std::map{{"v", b}}}` is `(*{1:v*})`.
template <class T> std::string tree_structure(const T& x) {
  if constexpr (std::is_same_v<T, Array>) {
    return "*";
  } else if constexpr (!TreeTraits<T>::is_tree) {
    return "_";
  } else if constexpr (detail::IsStdVector<T>::value) {
    std::string s = "[";
    for (const auto& e : x) s += tree_structure(e);
    return s + "]";
  } else if constexpr (detail::IsStringMap<T>::value) {
    std::string s = "{";
    for (const auto& [k, e] : x) s += std::to_string(k.size()) + ":" + k + tree_structure(e);
    return s + "}";
  } else if constexpr (detail::IsStdArray<T>::value) {
    std::string s = "(";
    for (const auto& e : x) s += tree_structure(e);
    return s + ")";
  } else if constexpr (detail::IsTupleLike<T>::value) {
    std::string s = "(";
    std::apply([&](const auto&... e) { ((s += tree_structure(e)), ...); }, x);
    return s + ")";
  } else {
    size_t n = 0;
    TreeTraits<T>::for_each(x, [&](const Array&) { ++n; });
    return "<" + std::to_string(n) + ">";
  }
}

namespace detail {
/// Reads one T of tree_structure's text from `s` at `pos` (advancing it), with empty leaves.
template <class T> T read_tree_structure(std::string_view s, size_t& pos, const std::string& what) {
  auto expect = [&](char c, const char* meaning) {
    if (pos >= s.size() || s[pos] != c) bad_tree_structure(what, s, pos, std::string("'") + c + "' (" + meaning + ")");
    ++pos;
  };
  auto at = [&](char c) { return pos < s.size() && s[pos] == c; };
  T out{};
  if constexpr (std::is_same_v<T, Array>) {
    expect('*', "an array");
  } else if constexpr (!TreeTraits<T>::is_tree) {
    expect('_', "a static value");
  } else if constexpr (IsStdVector<T>::value) {
    expect('[', "a std::vector");
    while (!at(']')) {
      if (pos >= s.size()) bad_tree_structure(what, s, pos, "']' (the end of a std::vector)");
      out.push_back(read_tree_structure<typename T::value_type>(s, pos, what));
    }
    ++pos;
  } else if constexpr (IsStringMap<T>::value) {
    expect('{', "a std::map");
    while (!at('}')) {
      size_t len = 0, digits = 0;
      for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++digits) len = len * 10 + size_t(s[pos] - '0');
      if (digits == 0) bad_tree_structure(what, s, pos, "a key length or '}' (the end of a std::map)");
      expect(':', "after a key length");
      if (pos + len > s.size()) bad_tree_structure(what, s, pos, "a key of " + std::to_string(len) + " characters");
      std::string key(s.substr(pos, len));
      pos += len;
      out.emplace(std::move(key), read_tree_structure<typename T::mapped_type>(s, pos, what));
    }
    ++pos;
  } else if constexpr (IsStdArray<T>::value) {
    expect('(', "a std::array");
    for (auto& e : out) e = read_tree_structure<std::decay_t<decltype(e)>>(s, pos, what);
    expect(')', "the end of a std::array");
  } else if constexpr (IsTupleLike<T>::value) {
    expect('(', "a tuple or pair");
    std::apply([&](auto&... e) { ((e = read_tree_structure<std::decay_t<decltype(e)>>(s, pos, what)), ...); }, out);
    expect(')', "the end of a tuple or pair");
  } else {  // a TESSEL_TREE struct: the structure of its default value
    const std::string want = tree_structure(out);
    if (s.compare(pos, want.size(), want) != 0) bad_tree_structure(what, s, pos, "'" + want + "'");
    pos += want.size();
  }
  return out;
}
}  // namespace detail

/// A T of structure `structure` (from tree_structure) whose leaves are empty arrays, to be
/// filled with tree_replace_leaves. A ValueError naming `what` when the text does not
/// describe a T. Static members come back default-constructed.
template <class T> T tree_skeleton(std::string_view structure, const std::string& what) {
  size_t pos = 0;
  T out = detail::read_tree_structure<T>(structure, pos, what);
  if (pos != structure.size()) detail::bad_tree_structure(what, structure, pos, "the end of the structure");
  return out;
}

}  // namespace tessel
