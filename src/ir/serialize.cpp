#include "ir/serialize.h"

#include <bit>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/array_impl.h"
#include "core/shape_check.h"
#include "tessel/error.h"

namespace tessel::ir {

// ---- Writer / Reader ----

using wire::append_le;
using wire::read_le;

void Writer::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  u64(bits);
}
void Writer::str(std::string_view s) {
  count(s.size());
  raw(s.data(), s.size());
}
void Writer::ints(const std::vector<int64_t>& v) {
  count(v.size());
  for (auto x : v) i64(x);
}
void Writer::strs(const std::vector<std::string>& v) {
  count(v.size());
  for (auto& s : v) str(s);
}

void Reader::fail(const std::string& message) const {
  throw ValueError(what() + ": " + message + " (at byte " + std::to_string(pos_) + " of " + std::to_string(in_.size()) +
                   ")");
}
void Reader::truncated(size_t n, const char* item) const {
  fail(std::string("truncated input: ") + item + " needs " + std::to_string(n) + " bytes, " +
       std::to_string(remaining()) + " left");
}
void Reader::too_many(uint64_t n) const {
  fail("truncated input: a count of " + std::to_string(n) + " items needs more than the " + std::to_string(remaining()) +
       " bytes left");
}
double Reader::f64() {
  uint64_t bits = u64();
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
bool Reader::boolean() {
  uint8_t b = u8();
  if (b > 1) fail("invalid boolean byte " + std::to_string(b));
  return b == 1;
}
DType Reader::dtype() {
  uint8_t d = u8();
  if (d >= kNumDTypes) fail("invalid dtype code " + std::to_string(d));
  return DType(d);
}
std::string Reader::str() { return std::string(raw(count(1))); }
std::vector<int64_t> Reader::ints() {
  std::vector<int64_t> v(count(8));
  for (auto& x : v) x = i64();
  return v;
}
std::vector<std::string> Reader::strs() {
  std::vector<std::string> v(count(8));
  for (auto& s : v) s = str();
  return v;
}

// ---- parameter object readers ----

namespace {

struct ReaderRegistry {
  std::mutex mu;
  std::map<std::string, ParamReaderFn, std::less<>> by_kind;
};
ReaderRegistry& reader_registry() {
  static ReaderRegistry r;
  return r;
}

ParamReaderFn find_param_reader(std::string_view kind) {
  auto& r = reader_registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_kind.find(kind);
  return it == r.by_kind.end() ? nullptr : it->second;
}

}  // namespace

bool register_param_reader(std::string kind, ParamReaderFn fn) {
  auto& r = reader_registry();
  std::lock_guard lock(r.mu);
  if (!r.by_kind.emplace(kind, fn).second)
    throw Error("register_param_reader: a reader of parameter kind '" + kind + "' is already registered");
  return true;
}

void throw_closure_param(const std::string& what, const std::string& fix) {
  throw ValueError(what + " holds a C++ closure, which cannot be sent to another process; " + fix);
}

Device device_by_id(int64_t id, const std::string& what) {
  auto all = devices();
  for (auto& d : all)
    if (d.id() == id) return d;
  throw ValueError(what + ": no device with id " + std::to_string(id) + " in this job of " +
                   std::to_string(all.size()) + " devices (the program was serialized in a larger job?)");
}

void write_aval(Writer& w, const Aval& a) {
  w.ints(a.shape);
  w.dtype(a.dtype);
  w.boolean(a.weak_type);
}

Aval read_aval(Reader& r) {
  Aval a;
  a.shape = r.ints();
  a.dtype = r.dtype();
  a.weak_type = r.boolean();
  try {
    tessel::detail::checked_size("an aval", a);
  } catch (const ShapeError& e) {
    r.fail(e.what());
  }
  return a;
}

void write_array(Writer& w, const Array& a) {
  write_aval(w, a.aval());
  auto* c = tessel::detail::require_concrete(a, "serialize");
  c->buffer()->wait();
  w.raw(c->buffer()->data(), a.nbytes());
}

Array read_array(Reader& r) {
  Aval a = read_aval(r);
  if (uint64_t(a.size()) > r.remaining() / itemsize(a.dtype))  // (nbytes could overflow)
    r.fail("truncated input: an array " + a.to_string() + " needs more than the " + std::to_string(r.remaining()) +
           " bytes left");
  auto bytes = r.raw(a.nbytes());
  if (a.dtype == DType::bool_)  // kernels read these bytes as bool: only 0 and 1 are values
    for (char b : bytes)
      if (uint8_t(b) > 1) r.fail("invalid boolean byte " + std::to_string(uint8_t(b)) + " in an array");
  auto* dev = tessel::detail::default_device();
  auto buf = tessel::detail::Buffer::allocate(bytes.size(), dev);
  if (!bytes.empty()) std::memcpy(buf->data(), bytes.data(), bytes.size());
  buf->set_ready();
  return tessel::detail::make_concrete(a, dev, std::move(buf), false);
}

// ---- serialize ----

namespace {

// Parameter value tags: the ParamValue alternative's index.
static_assert(std::variant_size_v<ParamValue> == 10, "a new ParamValue kind needs a serialized form");

class ProgramWriter {
 public:
  std::string run(const Program& p) {
    w_.raw(kSerialMagic.data(), kSerialMagic.size());
    w_.u32(kSerialVersion);
    program(p);
    return w_.take();
  }

 private:
  void aval(const Aval& a) { write_aval(w_, a); }
  // A variable: its index in the table; the first occurrence also carries its aval.
  void var(const Var& v) {
    auto [it, fresh] = vars_.emplace(v.get(), vars_.size());
    w_.u64(it->second);
    if (fresh) aval(v->aval);
  }
  void atom(const Atom& a) {
    w_.boolean(a.is_literal());
    if (!a.is_literal()) return var(a.var());
    const Scalar& s = a.literal();
    w_.dtype(s.dtype());
    w_.boolean(a.aval().weak_type);
    w_.raw(s.data(), itemsize(s.dtype()));
  }
  // A nested program: 0 for none, else 1 + its index in the table; the first occurrence
  // also carries the program.
  void program_ref(const ProgramRef& p) {
    if (!p) return w_.u64(0);
    auto [it, fresh] = programs_.emplace(p.get(), programs_.size());
    w_.u64(it->second + 1);
    if (fresh) program(*p);
  }
  void constant(const Array& a, size_t i, const Program& p) {
    if (a.is_tracer())
      throw ValueError("serialize: constant " + std::to_string(i) + " of program '" + p.name +
                       "' is a tracer of an enclosing transformation; only closed programs with concrete constants "
                       "can be serialized (hoist traced constants to inputs first)");
    write_array(w_, a);
  }
  void object(const std::shared_ptr<const ParamObject>& obj) {
    w_.boolean(obj != nullptr);
    if (!obj) return;
    Writer sub;
    obj->write(sub);  // throws for values that cannot travel
    if (obj->serial_kind().empty())
      throw Error("internal: the parameter value " + obj->to_string() + " writes itself but names no serial_kind");
    w_.str(obj->serial_kind());
    w_.str(sub.bytes());
  }
  void value(const ParamValue& v) {
    w_.u8(uint8_t(v.index()));
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) w_.boolean(x);
          else if constexpr (std::is_same_v<T, int64_t>) w_.i64(x);
          else if constexpr (std::is_same_v<T, double>) w_.f64(x);
          else if constexpr (std::is_same_v<T, std::string>) w_.str(x);
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) w_.ints(x);
          else if constexpr (std::is_same_v<T, DType>) w_.dtype(x);
          else if constexpr (std::is_same_v<T, Scalar>) {
            w_.dtype(x.dtype());
            w_.raw(x.data(), itemsize(x.dtype()));
          } else if constexpr (std::is_same_v<T, ProgramRef>) program_ref(x);
          else if constexpr (std::is_same_v<T, std::vector<ProgramRef>>) {
            w_.count(x.size());
            for (auto& p : x) program_ref(p);
          } else object(x);
        },
        v);
  }
  void equation(const Equation& e, size_t i, const Program& p) {
    w_.str(e.prim->name);
    w_.count(e.inputs.size());
    for (auto& a : e.inputs) atom(a);
    w_.count(e.outputs.size());
    for (auto& v : e.outputs) var(v);
    w_.count(e.params.items().size());
    for (auto& [key, v] : e.params.items()) {
      w_.str(key);
      try {
        value(v);
      } catch (const ValueError& err) {
        if (std::string_view(err.what()).starts_with("serialize:")) throw;  // from a nested program
        throw ValueError("serialize: equation " + std::to_string(i) + " (" + e.prim->name + ") of program '" +
                         p.name + "', parameter '" + key + "': " + err.what());
      }
    }
  }
  void program(const Program& p) {
    w_.str(p.name);
    w_.count(p.invars.size());
    for (auto& v : p.invars) var(v);
    w_.count(p.constvars.size());
    for (auto& v : p.constvars) var(v);
    w_.count(p.consts.size());
    for (size_t i = 0; i < p.consts.size(); ++i) constant(p.consts[i], i, p);
    w_.count(p.eqns.size());
    for (size_t i = 0; i < p.eqns.size(); ++i) equation(p.eqns[i], i, p);
    w_.count(p.outvars.size());
    for (auto& a : p.outvars) atom(a);
  }

  Writer w_;
  std::unordered_map<const VarNode*, uint64_t> vars_;
  std::unordered_map<const Program*, uint64_t> programs_;
};

// ---- deserialize ----

/// Nested programs deeper than this are rejected (bad input must not exhaust the stack).
constexpr int kMaxDepth = 200;

class ProgramReader {
 public:
  explicit ProgramReader(std::string_view bytes) : r_(bytes, "deserialize") {}

  Program run() {
    if (r_.remaining() < kSerialMagic.size() || r_.raw(kSerialMagic.size()) != kSerialMagic)
      throw ValueError("deserialize: the bytes are not a serialized tessel program (no '" + std::string(kSerialMagic) +
                       "' header)");
    uint32_t version = r_.u32();
    if (version != kSerialVersion)
      throw ValueError("deserialize: the program is in serialization format version " + std::to_string(version) +
                       ", this build reads version " + std::to_string(kSerialVersion) +
                       "; serialize and deserialize with the same tessel version");
    Program p = program(0);
    if (!r_.at_end()) r_.fail(std::to_string(r_.remaining()) + " trailing bytes after the program");
    return p;
  }

 private:
  Aval aval() { return read_aval(r_); }
  Var var() {
    uint64_t i = r_.u64();
    if (i < vars_.size()) return vars_[i];
    if (i > vars_.size())
      r_.fail("variable " + std::to_string(i) + " is used before variable " + std::to_string(vars_.size()) +
              " is introduced");
    vars_.push_back(new_var(aval()));
    return vars_.back();
  }
  Scalar scalar(DType d) {
    auto bytes = r_.raw(itemsize(d));
    if (d == DType::bool_ && uint8_t(bytes[0]) > 1)  // (any other byte is not a bool)
      r_.fail("invalid boolean literal byte " + std::to_string(uint8_t(bytes[0])));
    return Scalar::load(d, bytes.data());
  }
  Atom atom() {
    if (!r_.boolean()) return Atom(var());
    DType d = r_.dtype();
    bool weak = r_.boolean();
    return Atom(scalar(d), weak);
  }
  ProgramRef program_ref(int depth) {
    uint64_t code = r_.u64();
    // (serialize writes 0 for a null program, which no primitive's parameters hold)
    if (code == 0) r_.fail("a parameter holds a null program");
    uint64_t i = code - 1;
    if (i < programs_.size()) {
      if (!programs_[i]) r_.fail("nested program " + std::to_string(i) + " refers to itself");
      return programs_[i];
    }
    if (i > programs_.size())
      r_.fail("nested program " + std::to_string(i) + " is used before program " + std::to_string(programs_.size()) +
              " is introduced");
    programs_.push_back(nullptr);
    auto p = std::make_shared<const Program>(program(depth + 1));
    programs_[i] = p;
    return p;
  }
  Array constant() { return read_array(r_); }
  std::shared_ptr<const ParamObject> object() {
    if (!r_.boolean()) return nullptr;
    std::string kind = r_.str();
    std::string data = r_.str();
    ParamReaderFn fn = find_param_reader(kind);
    if (!fn)
      r_.fail("unknown parameter kind '" + kind +
              "' (the module that defines it is not linked into this process, or the build differs)");
    Reader sub(data, "deserialize: parameter kind '" + kind + "'");
    auto obj = fn(sub);
    if (!sub.at_end()) sub.fail(std::to_string(sub.remaining()) + " trailing bytes");
    return obj;
  }
  ParamValue value(int depth) {
    uint8_t tag = r_.u8();
    switch (tag) {
      case 0: return r_.boolean();
      case 1: return r_.i64();
      case 2: return r_.f64();
      case 3: return r_.str();
      case 4: return r_.ints();
      case 5: return r_.dtype();
      case 6: return scalar(r_.dtype());
      case 7: return program_ref(depth);
      case 8: {
        std::vector<ProgramRef> v(r_.count(8));
        for (auto& p : v) p = program_ref(depth);
        return v;
      }
      case 9: return object();
      default: r_.fail("invalid parameter value tag " + std::to_string(tag));
    }
  }
  Equation equation(int depth) {
    std::string name = r_.str();
    const Primitive* prim = nullptr;
    try {
      prim = &lookup_primitive(name);
    } catch (const Error&) {
      r_.fail("unknown primitive '" + name +
              "' (the module that defines it is not linked into this process, or the build differs)");
    }
    Equation e{prim, {}, {}, {}};
    e.inputs.resize(r_.count(2), Atom(Scalar(0.0f), false));
    for (auto& a : e.inputs) a = atom();
    e.outputs.resize(r_.count(8));
    for (auto& v : e.outputs) v = var();
    size_t n = r_.count(9);
    for (size_t i = 0; i < n; ++i) {
      std::string key = r_.str();
      e.params.set(std::move(key), value(depth));
    }
    return e;
  }
  Program program(int depth) {
    if (depth > kMaxDepth) r_.fail("programs nested more than " + std::to_string(kMaxDepth) + " deep");
    Program p;
    p.name = r_.str();
    p.invars.resize(r_.count(8));
    for (auto& v : p.invars) v = var();
    p.constvars.resize(r_.count(8));
    for (auto& v : p.constvars) v = var();
    size_t nconsts = r_.count(10);
    for (size_t i = 0; i < nconsts; ++i) p.consts.push_back(constant());
    size_t neqns = r_.count(24);
    for (size_t i = 0; i < neqns; ++i) p.eqns.push_back(equation(depth));
    p.outvars.resize(r_.count(2), Atom(Scalar(0.0f), false));
    for (auto& a : p.outvars) a = atom();
    try {
      verify_program(p);
    } catch (const std::exception& err) {
      throw ValueError(std::string("deserialize: the program '") + p.name + "' does not verify: " + err.what());
    }
    return p;
  }

  Reader r_;
  std::vector<Var> vars_;
  std::vector<ProgramRef> programs_;
};

}  // namespace

std::string serialize(const Program& p) { return ProgramWriter().run(p); }

Program deserialize(std::string_view bytes) { return ProgramReader(bytes).run(); }

}  // namespace tessel::ir
