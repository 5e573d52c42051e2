// Communicators, reduction operators and argument checks of ts::comm (comm_impl.h).
#include <array>
#include <atomic>
#include <climits>
#include <cstdio>
#include <type_traits>

#include "comm/comm_impl.h"
#include "ir/serialize.h"
#include "ops/op_util.h"
#include "tessel/error.h"

namespace tessel::comm {
namespace detail {

namespace {
std::atomic<int> next_comm_id{0};
}  // namespace

CommImpl::CommImpl(MPI_Comm comm, bool owned, std::string name)
    : comm_(comm), owned_(owned), id_(next_comm_id++), name_(std::move(name)) {
  distributed::mpi::check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", "comm");
  distributed::mpi::check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", "comm");
}

CommImpl::~CommImpl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

const std::shared_ptr<CommImpl>& resolve(const Comm& c) {
  if (c.impl()) return c.impl();
  // tessel's duplicate of MPI_COMM_WORLD, made when the process joined the job (a collective
  // here would wait for processes that never communicate): tessel's messages never match
  // the program's own. Never destroyed: work still queued at exit uses it until
  // flush_and_finalize has run.
  static const auto* world = [] {
    distributed::mpi::ensure_initialized();
    return new std::shared_ptr<CommImpl>(std::make_shared<CommImpl>(distributed::mpi::world_comm(), false, "world"));
  }();
  return *world;
}

ir::ParamValue comm_param(const Comm& c) {
  if (!c.impl()) {
    // The world's parameter object is made once (and never destroyed, as the world itself):
    // an eager call in a hot loop allocates none, and the eager cache finds its entry by
    // comparing one pointer.
    static const auto* world = new std::shared_ptr<const ir::ParamObject>(std::make_shared<CommParam>(resolve(c)));
    return *world;
  }
  return std::shared_ptr<const ir::ParamObject>(std::make_shared<CommParam>(resolve(c)));
}

void CommParam::write(ir::Writer& w) const {
  if (comm != resolve(Comm()))
    throw ValueError("the communicator " + comm->name() +
                     " was made in this process (split, dup or adopted) and cannot be rebuilt in another; pass "
                     "the world communicator, or split it inside the function that runs there");
  w.str("world");
}

namespace {
[[maybe_unused]] const bool comm_registered =
    ir::register_param_reader("comm", [](ir::Reader& r) -> std::shared_ptr<const ir::ParamObject> {
      std::string which = r.str();
      if (which != "world") r.fail("unknown communicator '" + which + "' (only the world communicator travels)");
      return std::make_shared<CommParam>(resolve(Comm()));
    });
}  // namespace

const CommImpl& comm_of(const ir::Params& params) {
  return *params.get_object<CommParam>("comm").comm;
}

void throw_mpi_error(int err, const char* mpi_call, std::string_view api) {
  distributed::mpi::check(err, mpi_call, "comm." + std::string(api));
  throw Error("internal: " + std::string(mpi_call) + " failed");
}

void log_call(std::string_view api, int64_t items, const CommImpl& comm, double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", seconds);
  tessel::detail::log_line("comm " + std::string(api) + " " + std::to_string(items) + " items on " + comm.name() + ": " + text +
                           " s");
}

// ---- reduction operators ----

namespace {

constexpr Op kAllOps[] = {Op::Sum, Op::Prod, Op::Min, Op::Max, Op::LAnd, Op::LOr, Op::BAnd, Op::BOr, Op::LXor, Op::BXor};

// MPI has no 16-bit floating types: tessel's MPI_Ops combine them through float.
template <class H, Op O> void combine_half(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const H*>(in);
  auto* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = float(a[i]), y = float(b[i]);
    float r = O == Op::Sum ? x + y : O == Op::Prod ? x * y : O == Op::Min ? (x < y ? x : y) : (x > y ? x : y);
    b[i] = H(r);
  }
}

template <class H> MPI_Op half_op(Op op) {
  struct Ops {
    MPI_Op sum, prod, min, max;
  };
  static const Ops ops = [] {
    Ops o;
    MPI_Op_create(&combine_half<H, Op::Sum>, 1, &o.sum);
    MPI_Op_create(&combine_half<H, Op::Prod>, 1, &o.prod);
    MPI_Op_create(&combine_half<H, Op::Min>, 1, &o.min);
    MPI_Op_create(&combine_half<H, Op::Max>, 1, &o.max);
    return o;
  }();
  switch (op) {
    case Op::Sum: return ops.sum;
    case Op::Prod: return ops.prod;
    case Op::Min: return ops.min;
    case Op::Max: return ops.max;
    default: throw Error("internal: no float16/bfloat16 MPI_Op for " + to_string(op));
  }
}

MPI_Op builtin_op(Op op) {
  switch (op) {
    case Op::Sum: return MPI_SUM;
    case Op::Prod: return MPI_PROD;
    case Op::Min: return MPI_MIN;
    case Op::Max: return MPI_MAX;
    case Op::LAnd: return MPI_LAND;
    case Op::LOr: return MPI_LOR;
    case Op::BAnd: return MPI_BAND;
    case Op::BOr: return MPI_BOR;
    case Op::LXor: return MPI_LXOR;
    case Op::BXor: return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

bool is_bitwise(Op op) { return op == Op::BAnd || op == Op::BOr || op == Op::BXor; }
bool is_logical(Op op) { return op == Op::LAnd || op == Op::LOr || op == Op::LXor; }

// MPI defines bitwise ops on integers only; on bool they are the logical ones.
Op bool_equivalent(Op op) {
  return op == Op::BAnd ? Op::LAnd : op == Op::BOr ? Op::LOr : op == Op::BXor ? Op::LXor : op;
}

}  // namespace

std::string op_name(Op op) { return to_string(op); }

Op checked_op(Op op, const std::string& api) {
  for (Op o : kAllOps)
    if (o == op) return op;
  throw ValueError("comm." + api + ": Op(" + std::to_string(int(op)) +
                   ") is not a reduction operator (an integer cast to Op?); use one of SUM, PROD, MIN, MAX, LAND, LOR, "
                   "BAND, BOR, LXOR, BXOR");
}

void check_op(const std::string& api, Op op, DType d) {
  const std::string head = "comm." + api + ": op " + to_string(op) + " is not defined for " + dtype_name(d);
  if (d == DType::bool_) {
    if (op == Op::Sum || op == Op::Prod || op == Op::Min || op == Op::Max)
      throw DTypeError(head + "; use LOR/LAND (or BOR/BAND) on bool, or convert to int32 first to count");
    return;
  }
  const bool integer = !is_floating(d) && !is_complex(d);
  if ((is_logical(op) || is_bitwise(op)) && !integer)
    throw DTypeError(head + "; logical and bitwise ops take bool and integer arrays; compare first (x != 0)");
  if (is_complex(d) && (op == Op::Min || op == Op::Max))
    throw DTypeError(head + "; complex numbers have no order: reduce the real part or abs(x) instead");
}

MPI_Op mpi_op(Op op, DType d) {
  if (d == DType::float16) return half_op<float16_t>(op);
  if (d == DType::bfloat16) return half_op<bfloat16_t>(op);
  return builtin_op(d == DType::bool_ ? bool_equivalent(op) : op);
}

void check_rank(const std::string& api, const char* what, int value, const CommImpl& comm, bool allow_any) {
  if ((value >= 0 && value < comm.size()) || (allow_any && value == ANY_SOURCE)) return;
  throw ValueError("comm." + api + ": " + what + " " + std::to_string(value) + " is outside the communicator " +
                   comm.name() + " of size " + std::to_string(comm.size()) + "; use a rank in [0, " +
                   std::to_string(comm.size()) + ")" + (allow_any ? " or ANY_SOURCE" : ""));
}

void check_tag(const std::string& api, const char* what, int tag, bool allow_any) {
  if (allow_any && tag == ANY_TAG) return;
  static const int tag_ub = [] {
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    return flag && ub ? *ub : 32767;
  }();
  if (tag < 0 || tag > tag_ub)
    throw ValueError("comm." + api + ": " + what + " " + std::to_string(tag) + " is not a valid MPI tag; use 0 to " +
                     std::to_string(tag_ub) + (allow_any ? " or ANY_TAG" : ""));
}

const ir::Params& world_op_params(Op op) {
  static const auto* params = [] {  // never destroyed: as the world communicator
    auto* all = new std::array<ir::Params, std::size(kAllOps)>;
    for (size_t i = 0; i < all->size(); ++i)
      (*all)[i] = ir::Params{{"comm", comm_param(Comm())}, {"op", to_string(kAllOps[i])}};
    return all;
  }();
  for (size_t i = 0; i < std::size(kAllOps); ++i)
    if (kAllOps[i] == op) return (*params)[i];
  throw Error("internal: world_op_params of Op(" + std::to_string(int(op)) + ")");
}

Op op_from_params(const ir::Params& params) {
  // Kernels call this on every run: compare without making strings.
  static const auto& names = *[] {  // never destroyed: kernels may run during exit
    auto* n = new std::array<std::string, std::size(kAllOps)>;
    for (size_t i = 0; i < n->size(); ++i) (*n)[i] = to_string(kAllOps[i]);
    return n;
  }();
  const std::string& name = params.get<std::string>("op");
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return kAllOps[i];
  throw Error("internal: unknown comm op " + name);
}

}  // namespace detail

// ---- Comm ----

Comm::Comm() = default;
int Comm::rank() const { return detail::resolve(*this)->rank(); }
int Comm::size() const { return detail::resolve(*this)->size(); }
const void* Comm::handle() const { return detail::resolve(*this)->handle(); }

std::string Comm::to_string() const {
  const auto& c = detail::resolve(*this);
  return c->name();
}

namespace {
std::string derived_name(const char* how, MPI_Comm c) {
  int size = 0;
  MPI_Comm_size(c, &size);
  static std::atomic<int> n{0};
  return std::string(how) + "#" + std::to_string(++n) + "(size=" + std::to_string(size) + ")";
}
}  // namespace

Comm Comm::split(int color, int key) const {
  if (color < 0)
    throw ValueError("comm.split: color " + std::to_string(color) + " is negative; use a color >= 0 (processes with "
                     "the same color form one communicator)");
  const auto& c = detail::resolve(*this);
  MPI_Comm out;
  distributed::mpi::check(MPI_Comm_split(c->comm(), color, key, &out), "MPI_Comm_split", "comm.split");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return Comm(std::make_shared<detail::CommImpl>(out, true, derived_name("split", out)));
}

Comm Comm::dup() const {
  const auto& c = detail::resolve(*this);
  MPI_Comm out;
  distributed::mpi::check(MPI_Comm_dup(c->comm(), &out), "MPI_Comm_dup", "comm.dup");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return Comm(std::make_shared<detail::CommImpl>(out, true, derived_name("dup", out)));
}

Comm Comm::adopt(const void* mpi_comm) {
  if (!mpi_comm) throw ValueError("comm.adopt: the MPI_Comm pointer is null; pass the address of a communicator");
  distributed::mpi::ensure_initialized();
  MPI_Comm c = *static_cast<const MPI_Comm*>(mpi_comm);
  if (c == MPI_COMM_NULL) throw ValueError("comm.adopt: MPI_COMM_NULL is not a communicator");
  return Comm(std::make_shared<detail::CommImpl>(c, false, derived_name("adopted", c)));
}

Comm world() { return Comm(); }

std::string to_string(Op op) {
  switch (op) {
    case Op::Sum: return "SUM";
    case Op::Prod: return "PROD";
    case Op::Min: return "MIN";
    case Op::Max: return "MAX";
    case Op::LAnd: return "LAND";
    case Op::LOr: return "LOR";
    case Op::BAnd: return "BAND";
    case Op::BOr: return "BOR";
    case Op::LXor: return "LXOR";
    case Op::BXor: return "BXOR";
  }
  return "Op(" + std::to_string(int(op)) + ")";  // not an operator: checked_op refuses it
}

}  // namespace tessel::comm
