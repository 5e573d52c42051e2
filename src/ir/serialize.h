#pragma once
// Programs as bytes, so that they can travel to another process (a worker that owns the
// devices a jit runs on, a pipeline stage): `serialize` writes a program with its nested
// programs, parameters, literals and constants; `deserialize` rebuilds it in any process
// of the same build. docs/program_ir.md ("Serialization") describes the format.
#include <cstdint>
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

/// Appends little-endian values to a byte string (what ParamObject::write writes into).
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u32(uint32_t v);
  void u64(uint64_t v);
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
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return int64_t(u64()); }
  double f64();
  bool boolean();
  DType dtype();
  /// A count of items that each take at least `min_item_bytes` bytes: throws when fewer
  /// bytes are left than the count needs (so bad input never allocates wildly).
  size_t count(size_t min_item_bytes = 1);
  std::string str();
  /// `n` raw bytes (a view into the input).
  std::string_view raw(size_t n);
  std::vector<int64_t> ints();
  std::vector<std::string> strs();
  size_t offset() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  bool at_end() const { return pos_ == in_.size(); }
  const std::string& what() const { return what_; }
  /// Throws ValueError "<what>: <message> (at byte <offset>)".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  void need(size_t n, const char* item);
  std::string_view in_;
  size_t pos_ = 0;
  std::string what_;
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
