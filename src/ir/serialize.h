#pragma once
// Programs as bytes, so that they can travel to another process (a worker that owns the
// devices a jit runs on, a pipeline stage): `serialize` writes a program with its nested
// programs, parameters, literals and constants; `deserialize` rebuilds it in any process
// of the same build. docs/program_ir.md ("Serialization") describes the format.
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/params.h"
#include "ir/program.h"
#include "tessel/device.h"

namespace tessel::ir {

/// The first bytes of every serialized program, and the format version it is written in.
inline constexpr std::string_view kSerialMagic = "TESSELIR";
inline constexpr uint32_t kSerialVersion = 1;

namespace wire {
// Integers travel little-endian: on a little-endian host their bytes as they are (one
// append, one load). Inline: every message of the controller channel reads and writes a
// dozen of them.
template <class U> U to_little_endian(U v) {
  if constexpr (std::endian::native == std::endian::little) return v;
  else if constexpr (sizeof(U) == 4) return __builtin_bswap32(v);
  else return __builtin_bswap64(v);
}
template <class U> void append_le(std::string& out, U v) {
  v = to_little_endian(v);
  char bytes[sizeof(U)];
  std::memcpy(bytes, &v, sizeof(U));
  out.append(bytes, sizeof(U));
}
template <class U> U read_le(const char* at) {
  U v;
  std::memcpy(&v, at, sizeof(U));
  return to_little_endian(v);
}
}  // namespace wire

/// Appends little-endian values to a byte string (what ParamObject::write writes into).
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u32(uint32_t v) { wire::append_le(out_, v); }
  void u64(uint64_t v) { wire::append_le(out_, v); }
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f64(double v);
  void boolean(bool v) { u8(v ? 1 : 0); }
  void dtype(DType d) { u8(uint8_t(d)); }
  /// A count of the items that follow.
  void count(size_t n) { u64(n); }
  /// Length-prefixed bytes.
  void str(std::string_view s);
  /// Raw bytes, without length (the reader must know how many).
  void raw(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }
  void ints(const std::vector<int64_t>& v);
  void strs(const std::vector<std::string>& v);
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads what a Writer wrote. Every read is bounds-checked: running past the end, a count
/// larger than the bytes left could hold, or an invalid dtype/bool throws ValueError naming
/// `what` (e.g. "deserialize") and the offset.
class Reader {
 public:
  Reader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}
  /// The same, named by a string literal: kept as a pointer (no string made per reader;
  /// every message of the controller channel makes one).
  template <size_t N> Reader(std::string_view in, const char (&what)[N]) : in_(in), literal_what_(what) {}
  uint8_t u8() {
    need(1, "a byte");
    return uint8_t(in_[pos_++]);
  }
  uint32_t u32() {
    need(4, "a 32-bit integer");
    const uint32_t v = wire::read_le<uint32_t>(in_.data() + pos_);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    need(8, "a 64-bit integer");
    const uint64_t v = wire::read_le<uint64_t>(in_.data() + pos_);
    pos_ += 8;
    return v;
  }
  int64_t i64() { return int64_t(u64()); }
  double f64();
  bool boolean();
  DType dtype();
  /// A count of items that each take at least `min_item_bytes` bytes: throws when fewer
  /// bytes are left than the count needs (so bad input never allocates wildly).
  size_t count(size_t min_item_bytes = 1) {
    const uint64_t n = u64();
    if (min_item_bytes && n > remaining() / min_item_bytes) [[unlikely]]
      too_many(n);
    return size_t(n);
  }
  std::string str();
  /// `n` raw bytes (a view into the input).
  std::string_view raw(size_t n) {
    need(n, "a byte string");
    const std::string_view v = in_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::vector<int64_t> ints();
  std::vector<std::string> strs();
  size_t offset() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  bool at_end() const { return pos_ == in_.size(); }
  std::string what() const { return literal_what_ ? std::string(literal_what_) : what_; }
  /// Throws ValueError "<what>: <message> (at byte <offset>)".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  void need(size_t n, const char* item) {
    if (n > remaining()) [[unlikely]]
      truncated(n, item);
  }
  [[noreturn]] void truncated(size_t n, const char* item) const;
  [[noreturn]] void too_many(uint64_t n) const;
  std::string_view in_;
  size_t pos_ = 0;
  std::string what_;
  const char* literal_what_ = nullptr;  // instead of what_, when named by a literal
};

/// Rebuilds one ParamObject kind from the bytes its `write` produced (the reader sees
/// exactly those bytes; it must consume them all).
using ParamReaderFn = std::shared_ptr<const ParamObject> (*)(Reader& r);
/// Registers the reader of `kind` (call it next to the class, from a static initializer:
/// `const bool registered = register_param_reader("mesh", read_mesh_param);`). Returns true;
/// throws if `kind` is taken.
bool register_param_reader(std::string kind, ParamReaderFn fn);

/// [[noreturn]] helper for ParamObject::write of values holding C++ closures: throws
/// ValueError "<what> holds a C++ closure, which cannot be sent to another process; <fix>".
[[noreturn]] void throw_closure_param(const std::string& what, const std::string& fix);

/// The device of the job with global id `id` (meshes and shardings name devices by id);
/// throws ValueError naming `what` when the job has no such device.
Device device_by_id(int64_t id, const std::string& what);

/// An aval: shape, dtype, weak type.
void write_aval(Writer& w, const Aval& a);
Aval read_aval(Reader& r);
/// A concrete array's aval and bytes (waits until it is computed; a sharded array's whole
/// value). `read_array` makes it on the default device, uncommitted.
void write_array(Writer& w, const Array& a);
Array read_array(Reader& r);

/// The bytes of `p`: magic, version, then the program with its nested programs (shared
/// ones written once), equations by primitive name, every parameter, literals, and the
/// constants' values (dtype, shape, bytes). Throws ValueError naming the equation's
/// primitive and the parameter for a value that cannot travel (a host callback, a
/// custom rule's C++ function, a split MPI communicator), and for a constant that is a
/// tracer.
std::string serialize(const Program& p);

/// The program `bytes` hold (written by `serialize` of the same format version). Variables
/// are new (one per serialized variable, identity preserved), constants are arrays on the
/// default device, primitives and parameter kinds are looked up by name in this process.
/// Throws ValueError for a wrong magic or version, truncated or trailing bytes, an unknown
/// primitive or parameter kind, or a program that does not verify.
Program deserialize(std::string_view bytes);

}  // namespace tessel::ir
