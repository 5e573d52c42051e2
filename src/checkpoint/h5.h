#pragma once
// A thin layer over HDF5's C API for checkpoints: owned handles, failures as tessel errors
// carrying HDF5's own error stack (which HDF5 would otherwise print to stderr), and the
// HDF5 types that store tessel's dtypes as h5py reads them. HDF5 (Debian's parallel build)
// is not thread-safe: every call goes through h5::lock().
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tessel/dtype.h"

namespace tessel::checkpoints::h5 {

/// The mutex every HDF5 call is made under (the asynchronous writer runs in another thread).
std::recursive_mutex& lock();

/// Silences HDF5's printing of error stacks (once per process); failures become exceptions.
void init();

/// Throws tessel::Error "<what>: <call> failed: <HDF5's messages>" when `status` < 0.
int64_t check(int64_t status, const char* call, const std::string& what);

/// An owned HDF5 identifier, closed by the matching H5*close.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(), id_ = o.id_, o.id_ = H5I_INVALID_HID;
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: passed straight to H5* calls
  /// Closes now; a failure to close (a file whose last write failed) throws.
  void close(const std::string& what);
  void reset() noexcept;

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// `check`ed identifier, owned.
Handle own(hid_t id, const char* call, const std::string& what);

/// The HDF5 type of `dtype` in files and in memory (little-endian, as tessel's memory):
/// integers and IEEE floats as the standard types, bool as h5py's enum {FALSE, TRUE} of
/// int8, float16 as IEEE half precision (h5py reads float16), bfloat16 as a 16-bit float with
/// 8 exponent bits (h5py reads it converted by HDF5; the tessel_dtype attribute names it),
/// complex as h5py's compound {r, i}.
Handle type_of(DType dtype);
/// The dtype whose HDF5 type equals `type` (for files without a tessel_dtype attribute).
std::optional<DType> dtype_of(hid_t type);

/// Attributes of an object: strings (variable length, UTF-8 as h5py writes them) and int64.
void write_string_attr(hid_t obj, const char* name, const std::string& value, const std::string& what);
void write_int_attr(hid_t obj, const char* name, int64_t value, const std::string& what);
std::string read_string_attr(hid_t obj, const char* name, const std::string& what);
int64_t read_int_attr(hid_t obj, const char* name, const std::string& what);
bool has_attr(hid_t obj, const char* name);

}  // namespace tessel::checkpoints::h5
