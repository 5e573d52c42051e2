// Errors of asynchronous work reach whoever waits as tessel errors (core/buffer.h,
// as_tessel_error): a kernel's std::bad_alloc or std::system_error as ResourceExhaustedError,
// any other std:: exception as tessel::Error with its message; tessel's own keep their type.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/buffer.h"
#include "core/device_impl.h"
#include "tessel/tessel.h"

namespace {

namespace ts = tessel;
using ts::detail::Buffer;

// The error a reader of a buffer that failed with `e` gets.
template <class E> void expect_read_throws(std::exception_ptr e, const std::string& part) {
  auto b = Buffer::deferred(64, ts::detail::default_device());
  b->set_error(std::move(e));
  try {
    b->wait();
    ADD_FAILURE() << "no error";
  } catch (const E& x) {
    EXPECT_NE(std::string(x.what()).find(part), std::string::npos) << x.what();
  } catch (const std::exception& x) {
    ADD_FAILURE() << "another exception type: " << x.what();
  }
}

TEST(KernelErrors, BadAllocBecomesResourceExhausted) {
  expect_read_throws<ts::ResourceExhaustedError>(std::make_exception_ptr(std::bad_alloc()),
                                                 "out of memory while computing 64 bytes on cpu:0");
}

TEST(KernelErrors, SystemErrorBecomesResourceExhausted) {
  expect_read_throws<ts::ResourceExhaustedError>(
      std::make_exception_ptr(std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again))),
      "the system refused a resource while computing 64 bytes on cpu:0");
}

TEST(KernelErrors, OtherStdExceptionsBecomeErrorsWithTheirMessage) {
  expect_read_throws<ts::Error>(std::make_exception_ptr(std::out_of_range("vector::at")),
                                "computing 64 bytes on cpu:0 failed: vector::at");
}

TEST(KernelErrors, TesselErrorsKeepTheirType) {
  expect_read_throws<ts::ShapeError>(std::make_exception_ptr(ts::ShapeError("add: shapes")), "add: shapes");
}

// A failing allocation names the bytes, the shape and dtype, and the device.
TEST(KernelErrors, AllocationFailureNamesShapeDtypeAndDevice) {
  const ts::ShapeDtype aval({int64_t(1) << 30, int64_t(1) << 30}, ts::f32);  // 4 EiB: no machine has them
  try {
    (void)Buffer::allocate(aval.nbytes(), ts::detail::default_device(), &aval);
    ADD_FAILURE() << "no error";
  } catch (const ts::ResourceExhaustedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("f32[1073741824,1073741824] (4611686018427387904 bytes)"), std::string::npos) << m;
    EXPECT_NE(m.find("on cpu:0"), std::string::npos) << m;
  }
}

}  // namespace
