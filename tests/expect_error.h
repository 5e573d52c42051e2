#pragma once
// For tests of error paths: run a callable, expect an exception of a given type whose
// message names every expected part.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <string>

namespace tessel_test {

/// Runs f, expecting an exception of type E whose message contains every one of `parts`.
template <class E> void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace tessel_test
