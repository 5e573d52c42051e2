#pragma once
// For tests of error messages: run a callable and return what its ValueError says.
#include <exception>
#include <functional>
#include <string>

#include "tessel/error.h"

namespace tessel_test {

/// The message of the ValueError `f` throws: "no error" when it throws none, "not a
/// ValueError: ..." for any other exception.
inline std::string value_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tessel::ValueError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a ValueError: ") + e.what();
  }
  return "no error";
}

}  // namespace tessel_test
