#pragma once
#include <stdexcept>
#include <string>

#include "tessel/export.h"

namespace tessel {

/// Base of every error tessel throws. Messages name the operation, the offending values and
/// the fix, e.g. "add: cannot broadcast shapes (3, 2) and (4,)".
class TESSEL_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Shapes or ranks that do not fit together (broadcasting, reshape sizes, axes).
class TESSEL_API ShapeError : public Error {
 public:
  using Error::Error;
};

/// A dtype that the operation does not accept.
class TESSEL_API DTypeError : public Error {
 public:
  using Error::Error;
};

/// An index, axis or slice bound outside the valid range.
class TESSEL_API IndexError : public Error {
 public:
  using Error::Error;
};

/// An argument whose value (not shape or dtype) is invalid.
class TESSEL_API ValueError : public Error {
 public:
  using Error::Error;
};

/// A concrete value was requested from an abstract (traced) array, e.g. `item()` under jit.
class TESSEL_API ConcretizationError : public Error {
 public:
  using Error::Error;
};

/// A primitive lacks the rule a transformation needs (names the primitive and the rule).
class TESSEL_API NotImplementedError : public Error {
 public:
  using Error::Error;
};

/// The system could not provide a resource an operation needs: memory for an array (the
/// message names the bytes, shape, dtype and device), a thread, or a file. Raised instead
/// of std::bad_alloc, std::system_error or std::filesystem::filesystem_error.
class TESSEL_API ResourceExhaustedError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessel
