#include "checkpoint/h5.h"

#include <algorithm>
#include <cstring>

#include "tessel/error.h"

namespace tessel::checkpoints::h5 {

std::recursive_mutex& lock() {
  static std::recursive_mutex m;
  return m;
}

void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard g(lock());
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

namespace {
// HDF5's error stack, innermost first, as "; "-separated descriptions.
std::string error_stack() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto& s = *static_cast<std::string*>(data);
        if (!s.empty()) s += "; ";
        s += std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "");
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? "no HDF5 error message" : out;
}
}  // namespace

int64_t check(int64_t status, const char* call, const std::string& what) {
  if (status < 0) throw Error(what + ": " + call + " failed: " + error_stack());
  return status;
}

void Handle::reset() noexcept {
  if (id_ < 0) return;
  H5Idec_ref(id_);
  id_ = H5I_INVALID_HID;
  H5Eclear2(H5E_DEFAULT);
}

void Handle::close(const std::string& what) {
  if (id_ < 0) return;
  hid_t id = id_;
  id_ = H5I_INVALID_HID;
  check(H5Idec_ref(id), "closing an HDF5 object", what);
}

Handle own(hid_t id, const char* call, const std::string& what) { return Handle(hid_t(check(id, call, what))); }

namespace {
Handle copy(hid_t t) { return own(H5Tcopy(t), "H5Tcopy", "checkpoint type"); }

// A 16-bit IEEE-style float: sign at bit 15, `exponent_bits` below it, the rest mantissa.
Handle half_float(size_t exponent_bits, size_t bias) {
  Handle t = copy(H5T_IEEE_F32LE);
  const size_t mantissa = 15 - exponent_bits;
  check(H5Tset_fields(t, 15, mantissa, exponent_bits, 0, mantissa), "H5Tset_fields", "checkpoint type");
  check(H5Tset_size(t, 2), "H5Tset_size", "checkpoint type");
  check(H5Tset_ebias(t, bias), "H5Tset_ebias", "checkpoint type");
  return t;
}

Handle complex_of(hid_t part, size_t part_size) {
  Handle t = own(H5Tcreate(H5T_COMPOUND, 2 * part_size), "H5Tcreate", "checkpoint type");
  check(H5Tinsert(t, "r", 0, part), "H5Tinsert", "checkpoint type");
  check(H5Tinsert(t, "i", part_size, part), "H5Tinsert", "checkpoint type");
  return t;
}
}  // namespace

Handle type_of(DType dtype) {
  switch (dtype) {
    case DType::bool_: {
      Handle t = own(H5Tenum_create(H5T_NATIVE_INT8), "H5Tenum_create", "checkpoint type");
      int8_t no = 0, yes = 1;
      check(H5Tenum_insert(t, "FALSE", &no), "H5Tenum_insert", "checkpoint type");
      check(H5Tenum_insert(t, "TRUE", &yes), "H5Tenum_insert", "checkpoint type");
      return t;
    }
    case DType::int8: return copy(H5T_STD_I8LE);
    case DType::int16: return copy(H5T_STD_I16LE);
    case DType::int32: return copy(H5T_STD_I32LE);
    case DType::int64: return copy(H5T_STD_I64LE);
    case DType::uint8: return copy(H5T_STD_U8LE);
    case DType::uint16: return copy(H5T_STD_U16LE);
    case DType::uint32: return copy(H5T_STD_U32LE);
    case DType::uint64: return copy(H5T_STD_U64LE);
    case DType::float16: return half_float(5, 15);
    case DType::bfloat16: return half_float(8, 127);
    case DType::float32: return copy(H5T_IEEE_F32LE);
    case DType::float64: return copy(H5T_IEEE_F64LE);
    case DType::complex64: return complex_of(H5T_IEEE_F32LE, 4);
    case DType::complex128: return complex_of(H5T_IEEE_F64LE, 8);
  }
  throw DTypeError("checkpoint: no HDF5 type for dtype " + std::to_string(int(dtype)));
}

std::optional<DType> dtype_of(hid_t type) {
  for (int d = 0; d < kNumDTypes; ++d) {
    Handle t = type_of(DType(d));
    if (H5Tequal(t, type) > 0) return DType(d);
  }
  H5Eclear2(H5E_DEFAULT);
  return std::nullopt;
}

namespace {
// A string type of `size` bytes (H5T_VARIABLE: any length) in `cset`.
Handle string_type(size_t size, H5T_cset_t cset, const std::string& what) {
  Handle type = copy(H5T_C_S1);
  check(H5Tset_size(type, size), "H5Tset_size", what);
  check(H5Tset_cset(type, cset), "H5Tset_cset", what);
  return type;
}
}  // namespace

void write_string_attr(hid_t obj, const char* name, const std::string& value, const std::string& what) {
  // Fixed length: variable-length strings live in HDF5's global heap, which has no checksum.
  Handle type = string_type(std::max<size_t>(1, value.size()), H5T_CSET_UTF8, what);
  check(H5Tset_strpad(type, H5T_STR_NULLPAD), "H5Tset_strpad", what);
  Handle space = own(H5Screate(H5S_SCALAR), "H5Screate", what);
  Handle attr = own(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2", what);
  std::string padded = value;
  padded.resize(std::max<size_t>(1, value.size()), '\0');
  check(H5Awrite(attr, type, padded.data()), "H5Awrite", what);
  attr.close(what);
}

void write_int_attr(hid_t obj, const char* name, int64_t value, const std::string& what) {
  Handle space = own(H5Screate(H5S_SCALAR), "H5Screate", what);
  Handle attr = own(H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2", what);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), "H5Awrite", what);
  attr.close(what);
}

bool has_attr(hid_t obj, const char* name) {
  htri_t r = H5Aexists(obj, name);
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

namespace {
Handle open_scalar_attr(hid_t obj, const char* name, const std::string& what) {
  if (!has_attr(obj, name)) throw Error(what + ": the attribute '" + name + "' is missing");
  Handle attr = own(H5Aopen(obj, name, H5P_DEFAULT), "H5Aopen", what);
  Handle space = own(H5Aget_space(attr), "H5Aget_space", what);
  if (H5Sget_simple_extent_npoints(space) != 1)
    throw Error(what + ": the attribute '" + name + "' is not a single value");
  return attr;
}
}  // namespace

std::string read_string_attr(hid_t obj, const char* name, const std::string& what) {
  Handle attr = open_scalar_attr(obj, name, what);
  Handle ftype = own(H5Aget_type(attr), "H5Aget_type", what);
  if (H5Tget_class(ftype) != H5T_STRING) throw Error(what + ": the attribute '" + name + "' is not a string");
  const H5T_cset_t cset = H5Tget_cset(ftype);
  if (cset < 0) check(cset, "H5Tget_cset", what);
  if (H5Tis_variable_str(ftype) > 0) {
    Handle type = string_type(H5T_VARIABLE, cset, what);
    char* p = nullptr;
    check(H5Aread(attr, type, &p), "H5Aread", what);
    std::string out = p ? p : "";
    Handle space = own(H5Aget_space(attr), "H5Aget_space", what);
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, &p);
    return out;
  }
  size_t n = H5Tget_size(ftype);
  if (n == 0 || n > (size_t(1) << 30)) throw Error(what + ": the attribute '" + name + "' has a bad size");
  std::string out(n, '\0');
  Handle type = string_type(n, cset, what);
  check(H5Tset_strpad(type, H5T_STR_NULLPAD), "H5Tset_strpad", what);
  check(H5Aread(attr, type, out.data()), "H5Aread", what);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

int64_t read_int_attr(hid_t obj, const char* name, const std::string& what) {
  Handle attr = open_scalar_attr(obj, name, what);
  Handle ftype = own(H5Aget_type(attr), "H5Aget_type", what);
  if (H5Tget_class(ftype) != H5T_INTEGER) throw Error(what + ": the attribute '" + name + "' is not an integer");
  int64_t v = 0;
  check(H5Aread(attr, H5T_NATIVE_INT64, &v), "H5Aread", what);
  return v;
}

}  // namespace tessel::checkpoints::h5
