#pragma once
// A fixture for the api_coverage test: declares cos and a member sin, not a free sin.
namespace tessel {
struct Array {
  Array sin() const;
};
Array cos(const Array& x);
namespace detail {
Array tan(const Array& x);
}  // namespace detail
}  // namespace tessel
