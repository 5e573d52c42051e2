// ts::checkpoint: trees of arrays in HDF5 files, written and read piece by piece by every
// process (collective MPI-IO under mpirun, HDF5's POSIX driver alone), committed by a rename.
// docs/checkpoint.md describes the format and the guarantees.
#include "tessel/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <thread>
#include <utility>

#include "checkpoint/crc32c.h"
#include "checkpoint/h5.h"
#include "core/array_impl.h"
#include "distributed/mpi.h"
#include "tessel/distributed.h"
#include "tessel/make_array.h"

#ifndef TESSEL_VERSION_STRING
#define TESSEL_VERSION_STRING "unknown"
#endif

namespace tessel::checkpoints {

namespace fs = std::filesystem;
using h5::check;
using h5::Handle;
using h5::own;

namespace {

constexpr int64_t kFormatVersion = 1;
// The file starts with an HDF5 user block (ignored by HDF5 and h5py) holding tessel's own
// header: a magic, the length the file had when committed and a checksum of everything after
// the block, so that truncation and damage are found before HDF5 parses anything.
constexpr size_t kUserBlock = 512;
constexpr char kMagic[8] = {'T', 'S', 'L', 'C', 'K', 'P', 'T', '1'};
struct Header {
  char magic[8];
  uint64_t file_length;
  uint32_t crc;        // checksum of bytes [kUserBlock, file_length), of kind has_crc
  uint32_t has_crc;    // a Checksum: none (checksum = false), CRC-32 (files of tessel 0.1's
                       // first checkpoints) or CRC-32C (written now)
  uint32_t block_crc;  // CRC-32 (zlib) of the whole user block with this field 0
};
enum Checksum : uint32_t { kNoChecksum = 0, kCrc32 = 1, kCrc32c = 2 };

uint32_t block_crc(const unsigned char* block) {
  unsigned char copy[kUserBlock];
  std::memcpy(copy, block, kUserBlock);
  std::memset(copy + offsetof(Header, block_crc), 0, sizeof(uint32_t));
  return uint32_t(crc32_z(crc32_z(0L, Z_NULL, 0), copy, kUserBlock));
}

// ---- tree paths -------------------------------------------------------------------------

std::string escape_component(const std::string& s) {
  if (s.empty()) return "%";
  if (s == ".") return "%2E";
  std::string out;
  for (unsigned char c : s) {
    if (c == '/' || c == '%' || c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

[[noreturn]] void bad_structure(const std::string& structure, size_t pos, const char* expected) {
  throw ValueError("checkpoint: the tree structure '" + structure + "' is malformed at position " + std::to_string(pos) +
                   ": expected " + expected);
}

void walk_structure(const std::string& s, size_t& pos, const std::string& prefix, std::vector<std::string>& out) {
  if (pos >= s.size()) bad_structure(s, pos, "a tree");
  char c = s[pos++];
  switch (c) {
    case '*': out.push_back(prefix.empty() ? "/value" : prefix); return;
    case '_': return;
    case '(':
    case '[': {
      const char close = c == '(' ? ')' : ']';
      for (int64_t i = 0; pos < s.size() && s[pos] != close; ++i) walk_structure(s, pos, prefix + "/" + std::to_string(i), out);
      if (pos >= s.size()) bad_structure(s, pos, "the end of a tuple or vector");
      ++pos;
      return;
    }
    case '{': {
      while (pos < s.size() && s[pos] != '}') {
        size_t len = 0, digits = 0;
        for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 12; ++pos, ++digits) len = len * 10 + size_t(s[pos] - '0');
        if (digits == 0 || pos >= s.size() || s[pos] != ':') bad_structure(s, pos, "a map key 'length:key'");
        ++pos;
        if (len > s.size() - pos) bad_structure(s, pos, "a map key of the announced length");
        std::string key = s.substr(pos, len);
        pos += len;
        walk_structure(s, pos, prefix + "/" + escape_component(key), out);
      }
      if (pos >= s.size()) bad_structure(s, pos, "the end of a map");
      ++pos;
      return;
    }
    case '<': {
      int64_t n = 0;
      size_t digits = 0;
      for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 12; ++pos, ++digits) n = n * 10 + (s[pos] - '0');
      if (digits == 0 || pos >= s.size() || s[pos] != '>') bad_structure(s, pos, "'<n>' (a struct of n leaves)");
      ++pos;
      for (int64_t i = 0; i < n; ++i) out.push_back(prefix + "/" + std::to_string(i));
      return;
    }
    default: bad_structure(s, pos - 1, "one of * _ ( [ { <");
  }
}

// ---- the processes taking part --------------------------------------------------------

// Every process of a multi-controller job takes part (MPI-IO); alone, or as the driver of a
// single-controller job, this process writes through HDF5's POSIX driver.
struct Group {
  bool parallel = false;
  MPI_Comm comm = MPI_COMM_NULL;  // checkpoints' own duplicate: the writer thread's collectives
  int rank = 0;                   // never interleave with the program's
  int size = 1;
};

const Group& group() {
  static Group g = [] {
    Group out;
    if (distributed::mpi::joined() && distributed::mpi::world_size() > 1 &&
        distributed::mode() == distributed::Mode::multi_controller) {
      out.parallel = true;
      distributed::mpi::check(MPI_Comm_dup(distributed::mpi::world_comm(), &out.comm), "MPI_Comm_dup", "checkpoint");
      out.rank = distributed::mpi::world_rank();
      out.size = distributed::mpi::world_size();
    }
    return out;
  }();
  return g;
}

// True on every process when `ok` holds on all of them.
bool all_ok(const Group& g, bool ok, const char* what) {
  if (!g.parallel) return ok;
  int mine = ok ? 1 : 0, all = 0;
  distributed::mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, g.comm), "MPI_Allreduce", what);
  return all == 1;
}

Handle file_access(const Group& g, const std::string& what) {
  Handle fapl = own(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", what);
  // The newest format checksums all of HDF5's own metadata: damage is an error, not a crash.
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds", what);
  if (g.parallel) {
    check(H5Pset_fapl_mpio(fapl, g.comm, MPI_INFO_NULL), "H5Pset_fapl_mpio", what);
    check(H5Pset_all_coll_metadata_ops(fapl, true), "H5Pset_all_coll_metadata_ops", what);
    check(H5Pset_coll_metadata_write(fapl, true), "H5Pset_coll_metadata_write", what);
  }
  return fapl;
}

// Collective transfers. With `individual`, every process still makes the collective call
// but moves its own bytes itself (MPI-IO's two-phase aggregation skipped): for blocks that
// are contiguous in the file, one plain write or read each, at the disk's speed.
Handle transfer(const Group& g, bool individual, const std::string& what) {
  Handle dxpl = own(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", what);
  if (g.parallel) {
    check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio", what);
    if (individual) check(H5Pset_dxpl_mpio_collective_opt(dxpl, H5FD_MPIO_INDIVIDUAL_IO), "H5Pset_dxpl_mpio_collective_opt", what);
  }
  return dxpl;
}

// ---- pieces -----------------------------------------------------------------------------

using Range = std::vector<std::pair<int64_t, int64_t>>;

struct Piece {
  Range index;
  Device device;
};

// The distinct blocks of an array laid out by `sharding`, each with the first device holding
// it (replicated blocks once).
std::vector<Piece> distinct_pieces(const Sharding& sharding, const Shape& shape) {
  const auto& devices = sharding.device_set();
  auto indices = sharding.device_indices(shape);
  std::vector<Piece> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    bool seen = std::any_of(out.begin(), out.end(), [&](const Piece& p) { return p.index == indices[i]; });
    if (!seen) out.push_back({indices[i], devices[i]});
  }
  return out;
}

int64_t range_size(const Range& r) {
  int64_t n = 1;
  for (auto [a, b] : r) n *= std::max<int64_t>(0, b - a);
  return n;
}

// True when block `r` of an array of `shape` is one contiguous run of its row-major bytes:
// single indices, then one range, then whole dimensions (rows split: yes; columns: no).
bool contiguous(const Range& r, const Shape& shape) {
  size_t k = 0;
  while (k < r.size() && r[k].second - r[k].first == 1) ++k;
  for (size_t j = k + 1; j < r.size(); ++j)
    if (r[j].first != 0 || r[j].second != shape[j]) return false;
  return true;
}

// How many pieces the busiest process handles (the number of collective calls all make).
size_t max_per_process(const std::vector<Piece>& pieces) {
  std::map<int, size_t> count;
  size_t most = 0;
  for (const Piece& p : pieces) most = std::max(most, ++count[p.device.process_index()]);
  return most;
}

// File and memory dataspaces selecting block `r` of a dataset of `shape`, or nothing.
std::pair<Handle, Handle> selection(hid_t file_space, const Shape& shape, const Range* r, const std::string& what) {
  Handle fsel = own(H5Scopy(file_space), "H5Scopy", what);
  Handle msel;
  if (shape.empty()) {
    msel = own(H5Screate(H5S_SCALAR), "H5Screate", what);
    if (r) {
      check(H5Sselect_all(fsel), "H5Sselect_all", what);
    } else {
      check(H5Sselect_none(fsel), "H5Sselect_none", what);
      check(H5Sselect_none(msel), "H5Sselect_none", what);
    }
    return {std::move(fsel), std::move(msel)};
  }
  if (!r || range_size(*r) == 0) {
    hsize_t one = 1;
    msel = own(H5Screate_simple(1, &one, nullptr), "H5Screate_simple", what);
    check(H5Sselect_none(fsel), "H5Sselect_none", what);
    check(H5Sselect_none(msel), "H5Sselect_none", what);
    return {std::move(fsel), std::move(msel)};
  }
  std::vector<hsize_t> start, count;
  for (auto [a, b] : *r) start.push_back(hsize_t(a)), count.push_back(hsize_t(b - a));
  check(H5Sselect_hyperslab(fsel, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "H5Sselect_hyperslab", what);
  msel = own(H5Screate_simple(int(count.size()), count.data(), nullptr), "H5Screate_simple", what);
  return {std::move(fsel), std::move(msel)};
}

Handle simple_space(const Shape& shape, const std::string& what) {
  if (shape.empty()) return own(H5Screate(H5S_SCALAR), "H5Screate", what);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return own(H5Screate_simple(int(dims.size()), dims.data(), nullptr), "H5Screate_simple", what);
}

// ---- the user block ---------------------------------------------------------------------

// A file descriptor, closed on scope exit. Opening failures throw E naming `what` and `path`.
class Fd {
 public:
  template <class E = Error> static Fd open(const std::string& path, int flags, const std::string& what) {
    int fd = ::open(path.c_str(), flags);
    if (fd < 0) throw E(what + ": cannot open '" + path + "': " + std::strerror(errno));
    return Fd(fd);
  }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  explicit Fd(int fd) : fd_(fd) {}
  int fd_;
};

// The checksum of kind `kind` (0 for none) of bytes [from, to) of the file: mapped, not
// copied (at save time the file is still in the page cache), 64 MiB at a time. With `flush`
// (at save time) the range's dirty pages are handed to the disk first and waited for after
// the checksum, which runs meanwhile: every process flushes its own slice, in parallel, as
// separate writers of separate files would, and the commit's fsync has little left.
uint32_t crc_of_file(int fd, uint64_t from, uint64_t to, Checksum kind, bool flush, const std::string& what) {
  constexpr uint64_t kWindow = uint64_t(64) << 20;
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  // Failures to flush are left to the commit's fsync, which reports them.
  if (flush && to > from) sync_file_range(fd, off_t(from), off_t(to - from), SYNC_FILE_RANGE_WRITE);
  uint32_t crc = 0;
  for (uint64_t off = kind == kNoChecksum ? to : from; off < to;) {
    const uint64_t base = off / page * page, end = std::min(to, base + kWindow);
    void* map = ::mmap(nullptr, size_t(end - base), PROT_READ, MAP_SHARED | MAP_POPULATE, fd, off_t(base));
    if (map == MAP_FAILED) {  // a file system without mmap: read it
      std::vector<unsigned char> buf(size_t(end - off));
      for (size_t got = 0; got < buf.size();) {
        ssize_t n = pread(fd, buf.data() + got, buf.size() - got, off_t(off + got));
        if (n <= 0) throw Error(what + ": reading the file back for its checksum failed: " + std::strerror(errno));
        got += size_t(n);
      }
      crc = kind == kCrc32c ? crc32c::extend(crc, buf.data(), buf.size()) : uint32_t(crc32_z(crc, buf.data(), buf.size()));
      off = end;
      continue;
    }
    ::madvise(map, size_t(end - base), MADV_SEQUENTIAL);
    const auto* bytes = static_cast<const unsigned char*>(map) + (off - base);
    crc = kind == kCrc32c ? crc32c::extend(crc, bytes, size_t(end - off)) : uint32_t(crc32_z(crc, bytes, size_t(end - off)));
    ::munmap(map, size_t(end - base));
    off = end;
  }
  if (flush && to > from)
    sync_file_range(fd, off_t(from), off_t(to - from),
                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
  return crc;
}

// The checksum of kind `kind` of bytes [kUserBlock, length) of `path`, each process reading
// one slice (the slices' CRCs combined); with `flush`, each also flushes its slice to the
// disk (crc_of_file). Collective. A tessel::Error on every process when one failed.
uint32_t file_crc(const Group& g, const std::string& path, uint64_t length, Checksum kind, bool flush,
                  const std::string& what) {
  const uint64_t body = length > kUserBlock ? length - kUserBlock : 0;
  const uint64_t per = (body + uint64_t(g.size) - 1) / uint64_t(g.size);
  const uint64_t from = kUserBlock + std::min(body, per * uint64_t(g.rank));
  const uint64_t to = kUserBlock + std::min(body, per * uint64_t(g.rank + 1));
  uint64_t mine[3] = {0, to - from, 1};
  std::string error;
  try {
    Fd fd = Fd::open(path, O_RDONLY, what);
    mine[0] = crc_of_file(fd.get(), from, to, kind, flush, what);
  } catch (const std::exception& e) {
    mine[2] = 0;
    error = e.what();
  }
  std::vector<uint64_t> all(mine, mine + 3);
  if (g.parallel) {
    all.resize(3 * size_t(g.size));
    distributed::mpi::check(MPI_Allgather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, g.comm), "MPI_Allgather", what);
  }
  uint32_t crc = 0;
  for (int r = 0; r < g.size; ++r) {
    if (all[3 * size_t(r) + 2] == 0)
      throw Error(error.empty() ? what + ": process " + std::to_string(r) + " could not read '" + path + "'" : error);
    const auto piece = uint32_t(all[3 * size_t(r)]);
    const uint64_t n = all[3 * size_t(r) + 1];
    crc = kind == kCrc32c ? crc32c::combine(crc, piece, n) : uint32_t(crc32_combine(crc, piece, z_off_t(n)));
  }
  return crc;
}

// Writes the header (`length` bytes in all, CRC `crc`) into the file about to be committed
// and flushes it to the disk.
void seal(const std::string& tmp, uint64_t length, std::optional<uint32_t> crc, const std::string& what) {
  Fd fd = Fd::open(tmp, O_RDWR, what);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.file_length = length;
  h.has_crc = crc ? kCrc32c : kNoChecksum;
  h.crc = crc.value_or(0);
  unsigned char block[kUserBlock] = {};
  std::memcpy(block, &h, sizeof h);
  h.block_crc = block_crc(block);
  std::memcpy(block, &h, sizeof h);
  if (pwrite(fd.get(), block, kUserBlock, 0) != ssize_t(kUserBlock) || fsync(fd.get()) != 0)
    throw Error(what + ": writing the header of '" + tmp + "' failed: " + std::strerror(errno) +
                (errno == ENOSPC ? " (the disk is full; the previous checkpoint is kept)" : ""));
}

Header read_header(const std::string& path, const std::string& what) {
  Fd fd = Fd::open<ValueError>(path, O_RDONLY, what);
  Header h{};
  unsigned char block[kUserBlock];
  off_t end = ::lseek(fd.get(), 0, SEEK_END);
  if (end < off_t(kUserBlock) || pread(fd.get(), block, kUserBlock, 0) != ssize_t(kUserBlock) ||
      std::memcmp(block, kMagic, sizeof kMagic) != 0)
    throw Error(what + ": '" + path + "' is not a tessel checkpoint (its header is missing or damaged)");
  std::memcpy(&h, block, sizeof h);
  if (block_crc(block) != h.block_crc) throw Error(what + ": '" + path + "' is damaged: its header fails its checksum");
  if (uint64_t(end) != h.file_length)
    throw Error(what + ": '" + path + "' is damaged: it has " + std::to_string(end) + " bytes but was committed with " +
                std::to_string(h.file_length) + " (truncated or appended to)");
  return h;
}

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    ::close(fd);
  }
}

// ---- saving -----------------------------------------------------------------------------

struct OwnedPiece {
  Range index;
  std::shared_ptr<detail::Buffer> buffer;  // held, never copied: arrays are immutable and a
  Array keep;                              // referenced buffer is never donated
};

struct LeafPlan {
  std::string path;
  ShapeDtype aval;
  std::vector<OwnedPiece> mine;
  size_t calls = 0;         // collective write calls every process makes for this leaf
  bool contiguous = false;  // every piece is one run of the file's bytes (the same on every process)
};

struct SaveJob {
  std::string path, tmp, structure;
  SaveOptions options;
  std::vector<LeafPlan> leaves;
  std::function<void()> after_commit;  // runs on rank 0 once the file is in place, before the save returns anywhere
};

SaveJob plan_save(const std::string& path, const std::string& structure, const std::vector<Array>& leaves,
                  const SaveOptions& options) {
  const std::string what = "checkpoints::save(\"" + path + "\")";
  std::vector<std::string> paths = leaf_paths(structure);
  if (paths.size() != leaves.size())
    throw ValueError(what + ": the tree structure has " + std::to_string(paths.size()) + " leaves but " +
                     std::to_string(leaves.size()) + " arrays were given");
  const Group& g = group();
  SaveJob job{path, path + ".tmp", structure, options, {}, {}};
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& a = leaves[i];
    if (!a.valid()) throw ValueError(what + ": the leaf " + paths[i] + " is an empty Array handle");
    if (a.is_tracer())
      throw ConcretizationError(what + ": the leaf " + paths[i] + " is a tracer; save concrete arrays, outside jit");
    LeafPlan plan{paths[i], a.aval(), {}, 0, false};
    std::vector<Piece> pieces = distinct_pieces(a.sharding(), a.shape());
    plan.calls = g.parallel ? max_per_process(pieces) : pieces.size();
    plan.contiguous = std::all_of(pieces.begin(), pieces.end(), [&](const Piece& p) { return contiguous(p.index, a.shape()); });
    std::vector<Shard> shards = a.addressable_shards();
    for (const Piece& p : pieces) {
      auto it = std::find_if(shards.begin(), shards.end(), [&](const Shard& s) { return s.device == p.device; });
      if (it == shards.end()) {
        if (g.parallel) continue;  // another process writes it
        throw NotImplementedError(what + ": the leaf " + plan.path + " has a piece on " + p.device.to_string() +
                                  " of process " + std::to_string(p.device.process_index()) +
                                  ", which this process cannot write (a single-controller job); gather it first");
      }
      if (range_size(p.index) == 0) continue;
      if (it->data.size() != range_size(p.index))
        throw Error(what + ": internal: the piece of " + plan.path + " on " + p.device.to_string() + " has " +
                    std::to_string(it->data.size()) + " elements for a block of " + std::to_string(range_size(p.index)));
      const detail::ConcreteArray* c = detail::require_concrete(it->data, "checkpoints::save");
      c->buffer()->check_not_donated();
      plan.mine.push_back({p.index, c->buffer(), it->data});
    }
    job.leaves.push_back(std::move(plan));
  }
  return job;
}

// Reserves the file's bytes before HDF5 writes any (HDF5 trims the file to its end at close):
// a full disk is then this clear error instead of a failure inside HDF5, which can leave
// HDF5's state unusable for the rest of the process.
void reserve_space(const SaveJob& job, const Group& g, const std::string& what) {
  std::string error;
  if (g.rank == 0) {
    uint64_t bytes = kUserBlock + (uint64_t(1) << 20) + 4 * (job.structure.size() + job.options.metadata_json.size());
    for (const LeafPlan& l : job.leaves) bytes += l.aval.nbytes() + 8192;
    int fd = ::open(job.tmp.c_str(), O_RDWR);
    int err = fd < 0 ? errno : posix_fallocate(fd, 0, off_t(bytes));
    if (fd >= 0) ::close(fd);
    if (err != 0 && err != EOPNOTSUPP && err != EINVAL)
      error = what + ": cannot reserve " + std::to_string(bytes) + " bytes for '" + job.tmp + "': " + std::strerror(err) +
              (err == ENOSPC || err == EFBIG ? " (the disk is full or the file size is limited); the previous checkpoint is kept"
                                             : "");
  }
  if (!all_ok(g, error.empty(), what.c_str()))
    throw Error(error.empty() ? what + ": process 0 could not reserve the file's space; the previous checkpoint is kept" : error);
}

void write_file(const SaveJob& job, const Group& g) {
  const std::string what = "checkpoints::save(\"" + job.path + "\")";
  std::lock_guard hold(h5::lock());
  Handle fcpl = own(H5Pcreate(H5P_FILE_CREATE), "H5Pcreate", what);
  check(H5Pset_userblock(fcpl, kUserBlock), "H5Pset_userblock", what);
  Handle fapl = file_access(g, what);
  Handle file = own(H5Fcreate(job.tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl), "H5Fcreate", what + " creating '" + job.tmp + "'");
  reserve_space(job, g, what);
  h5::write_int_attr(file, "tessel_format", kFormatVersion, what);
  h5::write_string_attr(file, "tessel_version", TESSEL_VERSION_STRING, what);
  h5::write_int_attr(file, "step", job.options.step, what);
  h5::write_string_attr(file, "metadata_json", job.options.metadata_json, what);
  h5::write_string_attr(file, "tree_structure", job.structure, what);
  h5::write_int_attr(file, "leaf_count", int64_t(job.leaves.size()), what);
  Handle lcpl = own(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate", what);
  check(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group", what);
  Handle dcpl = own(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", what);
  check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time", what);  // written once, by the pieces
  if (g.parallel) check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time", what);
  Handle collective = transfer(g, false, what), individual = transfer(g, true, what);
  for (size_t i = 0; i < job.leaves.size(); ++i) {
    const LeafPlan& leaf = job.leaves[i];
    const std::string lw = what + " leaf " + leaf.path;
    Handle type = h5::type_of(leaf.aval.dtype);
    Handle space = simple_space(leaf.aval.shape, lw);
    Handle ds = own(H5Dcreate2(file, leaf.path.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT), "H5Dcreate2", lw);
    h5::write_string_attr(ds, "tessel_dtype", dtype_name(leaf.aval.dtype), lw);
    h5::write_int_attr(ds, "tessel_leaf", int64_t(i), lw);
    for (size_t k = 0; k < leaf.calls; ++k) {
      const OwnedPiece* p = k < leaf.mine.size() ? &leaf.mine[k] : nullptr;
      const void* data = nullptr;
      if (p) {
        p->buffer->wait();
        data = p->buffer->data();
      }
      auto [fsel, msel] = selection(space, leaf.aval.shape, p ? &p->index : nullptr, lw);
      check(H5Dwrite(ds, type, msel, fsel, leaf.contiguous ? individual : collective, data), "H5Dwrite", lw);
    }
    ds.close(lw);
  }
  check(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush", what);
  file.close(what + " closing '" + job.tmp + "'");
}

// Cuts the space reserve_space added beyond HDF5's end of the file; returns the length.
uint64_t trim_reserve(const std::string& tmp, const std::string& what) {
  haddr_t eoa = 0;
  {
    std::lock_guard hold(h5::lock());
    Handle fapl = own(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", what);
    Handle file = own(H5Fopen(tmp.c_str(), H5F_ACC_RDONLY, fapl), "H5Fopen", what + " reopening '" + tmp + "'");
    check(H5Fget_eoa(file, &eoa), "H5Fget_eoa", what);
    file.close(what);
  }
  if (::truncate(tmp.c_str(), off_t(eoa)) != 0)
    throw Error(what + ": trimming '" + tmp + "' failed: " + std::strerror(errno));
  return uint64_t(eoa);
}

// Writes, then commits on every process together: the rename happens only when every
// process wrote and flushed its pieces.
void run_save(const SaveJob& job) {
  const Group& g = group();
  const std::string what = "checkpoints::save(\"" + job.path + "\")";
  std::exception_ptr failed;
  try {
    write_file(job, g);
  } catch (...) {
    failed = std::current_exception();
  }
  bool ok = all_ok(g, !failed, what.c_str());
  if (ok) {
    uint64_t length = 0;
    if (g.rank == 0) {
      try {
        length = trim_reserve(job.tmp, what);
      } catch (...) {
        failed = std::current_exception();
      }
    }
    if (g.parallel) distributed::mpi::check(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, g.comm), "MPI_Bcast", what);
    try {
      if (length < kUserBlock) throw Error(what + ": '" + job.tmp + "' is shorter than its header after writing");
      std::optional<uint32_t> crc;
      const uint32_t sum = file_crc(g, job.tmp, length, job.options.checksum ? kCrc32c : kNoChecksum, true, what);
      if (job.options.checksum) crc = sum;
      if (g.rank == 0) {
        seal(job.tmp, length, crc, what);
        if (std::rename(job.tmp.c_str(), job.path.c_str()) != 0)
          throw Error(what + ": renaming '" + job.tmp + "' to '" + job.path + "' failed: " + std::strerror(errno));
        fsync_directory(fs::path(job.path).parent_path());
        // Pruning before the closing all_ok below: no process returns from the save while
        // rank 0 still deletes old steps (a listing right after would see them).
        if (job.after_commit) job.after_commit();
      }
    } catch (...) {
      failed = std::current_exception();
    }
  }
  ok = all_ok(g, !failed, what.c_str());
  if (!ok) {
    if (g.rank == 0) {
      std::error_code ec;
      fs::remove(job.tmp, ec);  // the previous checkpoint at job.path is untouched
    }
    if (failed) std::rethrow_exception(failed);
    throw Error(what + ": another process failed to write its pieces; the previous checkpoint is kept");
  }
}

// ---- asynchronous saves -------------------------------------------------------------------

class Writer {
 public:
  ~Writer() {
    {
      std::unique_lock l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void submit(SaveJob job) {
    wait();
    std::unique_lock l(m_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    job_ = std::make_unique<SaveJob>(std::move(job));
    cv_.notify_all();
  }
  // Waits for the pending save; rethrows (once) the error of the last one that failed.
  void wait() {
    std::unique_lock l(m_);
    cv_.wait(l, [&] { return !job_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void loop() {
    std::unique_lock l(m_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || job_; });
      if (!job_) return;
      l.unlock();
      std::exception_ptr e;
      try {
        run_save(*job_);
      } catch (...) {
        e = std::current_exception();
      }
      l.lock();
      job_.reset();
      error_ = e;
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::unique_ptr<SaveJob> job_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

Writer& writer() {
  static Writer w;
  return w;
}

void start_save(SaveJob job) {
  writer().wait();  // one save at a time; an earlier failure surfaces here
  const Group& g = group();
  if (g.rank == 0) {
    std::error_code ec;
    fs::remove(job.tmp, ec);  // left by a crashed save
    if (!job.options.overwrite && fs::exists(job.path))
      throw ValueError("checkpoints::save(\"" + job.path + "\"): the checkpoint exists; pass {.overwrite = true} to replace it");
  }
  if (!all_ok(g, g.rank != 0 || job.options.overwrite || !fs::exists(job.path), "checkpoints::save"))
    throw ValueError("checkpoints::save(\"" + job.path + "\"): the checkpoint exists; pass {.overwrite = true} to replace it");
  if (job.options.async) {
    writer().submit(std::move(job));
  } else {
    run_save(job);
  }
}

// ---- restoring ----------------------------------------------------------------------------

struct OpenFile {
  Handle file;
  std::string what;
};

OpenFile open_checkpoint(const std::string& path, const std::string& what, const Group& g) {
  h5::init();
  // The whole file is checked before HDF5 parses any of it: HDF5 is not hardened against
  // damaged input (its global heap and raw data carry no checksum).
  Header h = read_header(path, what);
  if (h.has_crc != kNoChecksum && h.has_crc != kCrc32 && h.has_crc != kCrc32c)
    throw Error(what + ": '" + path + "' is damaged: its header names checksum kind " + std::to_string(h.has_crc));
  if (h.has_crc != kNoChecksum && file_crc(g, path, h.file_length, Checksum(h.has_crc), false, what) != h.crc)
    throw Error(what + ": '" + path + "' is damaged: its checksum does not match its contents");
  Handle fapl = file_access(g, what);
  OpenFile f{own(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), "H5Fopen", what), what};
  if (!h5::has_attr(f.file, "tessel_format"))
    throw Error(what + ": '" + path + "' is an HDF5 file without tessel's attributes, not a tessel checkpoint");
  int64_t version = h5::read_int_attr(f.file, "tessel_format", what);
  if (version != kFormatVersion)
    throw Error(what + ": '" + path + "' has format version " + std::to_string(version) + "; this tessel reads version " +
                std::to_string(kFormatVersion));
  return f;
}

ShapeDtype dataset_aval(hid_t ds, const std::string& leaf, const std::string& what) {
  Handle space = own(H5Dget_space(ds), "H5Dget_space", what);
  int rank = int(check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", what));
  if (rank > 32) throw Error(what + ": the leaf " + leaf + " has " + std::to_string(rank) + " dimensions");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims", what);
  ShapeDtype out;
  out.shape.assign(dims.begin(), dims.end());
  std::optional<DType> dt;
  if (h5::has_attr(ds, "tessel_dtype")) {
    dt = dtype_from_name(h5::read_string_attr(ds, "tessel_dtype", what));
  } else {
    Handle type = own(H5Dget_type(ds), "H5Dget_type", what);
    dt = h5::dtype_of(type);
  }
  if (!dt) throw DTypeError(what + ": the leaf " + leaf + " has an HDF5 type with no tessel dtype");
  out.dtype = *dt;
  return out;
}

Metadata metadata_of(hid_t file, const std::string& what) {
  Metadata m;
  m.step = h5::read_int_attr(file, "step", what);
  m.metadata_json = h5::read_string_attr(file, "metadata_json", what);
  m.tessel_version = h5::read_string_attr(file, "tessel_version", what);
  m.tree_structure = h5::read_string_attr(file, "tree_structure", what);
  m.leaf_paths = leaf_paths(m.tree_structure);
  if (h5::read_int_attr(file, "leaf_count", what) != int64_t(m.leaf_paths.size()))
    throw Error(what + ": the leaf count does not match the stored tree structure");
  for (const std::string& p : m.leaf_paths) {
    if (H5Lexists(file, p.substr(0, p.find('/', 1)).c_str(), H5P_DEFAULT) <= 0 ||
        H5Oexists_by_name(file, p.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw Error(what + ": the leaf " + p + " is missing from the file");
    }
    Handle ds = own(H5Dopen2(file, p.c_str(), H5P_DEFAULT), "H5Dopen2", what + " leaf " + p);
    m.leaves.push_back(dataset_aval(ds, p, what));
  }
  return m;
}

Array read_leaf(hid_t file, const std::string& leaf, const ShapeDtype& aval, const LeafTarget& target, const Group& g,
                hid_t collective, hid_t individual, const std::string& what) {
  const std::string lw = what + " leaf " + leaf;
  Handle ds = own(H5Dopen2(file, leaf.c_str(), H5P_DEFAULT), "H5Dopen2", lw);
  Handle type = h5::type_of(aval.dtype);
  Handle space = own(H5Dget_space(ds), "H5Dget_space", lw);
  Sharding sharding = target.sharding.valid() ? target.sharding : SingleDeviceSharding(Device(detail::default_device()));
  sharding.check_rank(target.shape.size(), lw);
  // The distinct blocks this process's devices need, each read once.
  const auto& devices = sharding.device_set();
  auto indices = sharding.device_indices(target.shape);
  std::vector<Range> mine;
  std::map<int, std::vector<Range>> per_process;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto& list = per_process[devices[i].process_index()];
    if (std::find(list.begin(), list.end(), indices[i]) == list.end()) list.push_back(indices[i]);
  }
  size_t calls = 0;
  for (auto& [p, list] : per_process) calls = std::max(calls, list.size());
  const bool runs = std::all_of(indices.begin(), indices.end(), [&](const Range& r) { return contiguous(r, target.shape); });
  const hid_t dxpl = runs ? individual : collective;
  if (!g.parallel) {
    for (const Device& d : devices)
      if (d.process_index() != process_index())
        throw NotImplementedError(lw + ": the target sharding has " + d.to_string() + " of process " +
                                  std::to_string(d.process_index()) +
                                  ", which this process cannot fill (a single-controller job); restore onto local devices");
  }
  mine = per_process[process_index()];
  // Each block is read straight into the memory of the first local device that holds it.
  std::vector<Array> blocks(mine.size());
  for (size_t k = 0; k < calls; ++k) {
    const Range* r = k < mine.size() ? &mine[k] : nullptr;
    std::shared_ptr<detail::Buffer> buffer;
    Aval block_aval({}, aval.dtype, false);
    detail::DeviceImpl* device = nullptr;
    if (r) {
      for (auto [a, b] : *r) block_aval.shape.push_back(std::max<int64_t>(0, b - a));
      for (size_t i = 0; i < devices.size() && !device; ++i)
        if (devices[i].process_index() == process_index() && indices[i] == *r) device = devices[i].impl();
      buffer = detail::Buffer::allocate(block_aval.nbytes(), device, &block_aval);
    }
    auto [fsel, msel] = selection(space, aval.shape, r, lw);
    check(H5Dread(ds, type, msel, fsel, dxpl, buffer && block_aval.nbytes() ? buffer->data() : nullptr), "H5Dread", lw);
    if (r) {
      buffer->set_ready();
      blocks[k] = detail::make_concrete(block_aval, device, std::move(buffer), true);
    }
  }
  if (sharding.is_single_device()) {
    if (blocks.empty()) return make_array_from_single_device_arrays(target.shape, sharding, {});
    return blocks[0];
  }
  std::vector<Array> pieces;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].process_index() != process_index()) continue;
    size_t k = size_t(std::find(mine.begin(), mine.end(), indices[i]) - mine.begin());
    pieces.push_back(blocks[k].device() == devices[i] ? blocks[k] : device_put(blocks[k], SingleDeviceSharding(devices[i])));
  }
  return make_array_from_single_device_arrays(target.shape, sharding, pieces);
}

std::string describe(const Shape& s) { return shape_to_string(s); }

}  // namespace

std::vector<std::string> leaf_paths(const std::string& structure) {
  std::vector<std::string> out;
  size_t pos = 0;
  walk_structure(structure, pos, "", out);
  if (pos != structure.size()) bad_structure(structure, pos, "the end of the structure");
  return out;
}

void save_leaves(const std::string& path, const std::string& structure, const std::vector<Array>& leaves,
                 const SaveOptions& options) {
  h5::init();
  start_save(plan_save(path, structure, leaves, options));
}

void wait_until_finished() { writer().wait(); }

Metadata read_metadata(const std::string& path) {
  writer().wait();
  const std::string what = "checkpoints::read_metadata(\"" + path + "\")";
  const Group& g = group();
  std::lock_guard hold(h5::lock());
  OpenFile f = open_checkpoint(path, what, g);
  return metadata_of(f.file, what);
}

std::vector<Array> restore_leaves(const std::string& path, const std::string& structure,
                                  const std::vector<LeafTarget>& targets) {
  writer().wait();
  const std::string what = "checkpoints::restore(\"" + path + "\")";
  const Group& g = group();
  std::lock_guard hold(h5::lock());
  OpenFile f = open_checkpoint(path, what, g);
  Metadata m = metadata_of(f.file, what);
  std::vector<std::string> want = leaf_paths(structure);
  if (structure != m.tree_structure) {
    std::string detail;
    for (size_t i = 0; i < std::max(want.size(), m.leaf_paths.size()); ++i) {
      std::string a = i < want.size() ? want[i] : "(none)", b = i < m.leaf_paths.size() ? m.leaf_paths[i] : "(none)";
      if (a != b) {
        detail = "; the first difference is leaf " + std::to_string(i) + ": the target has " + a + ", the file has " + b;
        break;
      }
    }
    throw ValueError(what + ": the target's tree structure '" + structure + "' differs from the saved '" +
                     m.tree_structure + "'" + detail);
  }
  if (targets.size() != m.leaves.size())
    throw ValueError(what + ": " + std::to_string(targets.size()) + " targets for " + std::to_string(m.leaves.size()) +
                     " saved leaves");
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].shape != m.leaves[i].shape)
      throw ShapeError(what + ": the leaf " + m.leaf_paths[i] + " has shape " + describe(m.leaves[i].shape) +
                       " in the file but " + describe(targets[i].shape) + " in the target");
    if (targets[i].dtype != m.leaves[i].dtype)
      throw DTypeError(what + ": the leaf " + m.leaf_paths[i] + " has dtype " + dtype_name(m.leaves[i].dtype) +
                       " in the file but " + dtype_name(targets[i].dtype) + " in the target; restore as the saved "
                       "dtype and convert with astype");
  }
  Handle collective = transfer(g, false, what), individual = transfer(g, true, what);
  std::vector<Array> out;
  for (size_t i = 0; i < targets.size(); ++i)
    out.push_back(read_leaf(f.file, m.leaf_paths[i], m.leaves[i], targets[i], g, collective, individual, what));
  f.file.close(what);
  return out;
}

void verify(const std::string& path) {
  writer().wait();
  const std::string what = "checkpoints::verify(\"" + path + "\")";
  std::lock_guard hold(h5::lock());
  OpenFile f = open_checkpoint(path, what, group());
  Metadata m = metadata_of(f.file, what);
  if (!read_header(path, what).has_crc)
    throw Error(what + ": '" + path + "' was saved without a checksum (checksum = false); its data cannot be verified");
}

// ---- CheckpointManager --------------------------------------------------------------------

namespace {
const std::regex& step_file() {
  static const std::regex re("ckpt_([0-9]{1,18})\\.h5");
  return re;
}
}  // namespace

CheckpointManager::CheckpointManager(std::string dir, ManagerOptions options) : dir_(std::move(dir)), options_(options) {
  if (options.max_to_keep < 0)
    throw ValueError("CheckpointManager: max_to_keep is " + std::to_string(options.max_to_keep) + "; use 0 (keep all) or more");
  if (options.save_interval_steps < 1)
    throw ValueError("CheckpointManager: save_interval_steps is " + std::to_string(options.save_interval_steps) +
                     "; use 1 or more");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw ValueError("CheckpointManager: cannot create the directory '" + dir_ + "': " + ec.message());
}

CheckpointManager::~CheckpointManager() {
  try {
    checkpoints::wait_until_finished();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel: CheckpointManager(%s): an asynchronous save failed: %s\n", dir_.c_str(), e.what());
  }
}

std::string CheckpointManager::path(int64_t step) const { return (fs::path(dir_) / ("ckpt_" + std::to_string(step) + ".h5")).string(); }

std::vector<int64_t> CheckpointManager::all_steps() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (std::regex_match(name, m, step_file())) steps.push_back(std::stoll(m[1].str()));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

int64_t CheckpointManager::latest_step() const {
  std::vector<int64_t> s = all_steps();
  return s.empty() ? -1 : s.back();
}

bool CheckpointManager::should_save(int64_t step) const {
  return step >= 0 && step % options_.save_interval_steps == 0 && !fs::exists(path(step));
}

void CheckpointManager::wait_until_finished() { checkpoints::wait_until_finished(); }

std::string CheckpointManager::checked_path(int64_t step) const {
  checkpoints::wait_until_finished();
  if (fs::exists(path(step))) return path(step);
  std::string list;
  for (int64_t s : all_steps()) list += (list.empty() ? "" : ", ") + std::to_string(s);
  throw ValueError("CheckpointManager(" + dir_ + ")::restore: there is no step " + std::to_string(step) +
                   "; saved steps: " + (list.empty() ? "none" : list));
}

void CheckpointManager::save_leaves_at(int64_t step, const std::string& structure, const std::vector<Array>& leaves,
                                       std::string metadata_json) {
  h5::init();
  writer().wait();
  if (group().rank == 0) {  // temporary files of saves that never committed
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec))
      if (e.path().extension() == ".tmp") fs::remove(e.path(), ec);
  }
  SaveOptions options;
  options.step = step;
  options.metadata_json = std::move(metadata_json);
  options.async = options_.async;
  SaveJob job = plan_save(path(step), structure, leaves, options);
  if (options_.max_to_keep > 0) {
    job.after_commit = [keep = size_t(options_.max_to_keep), this] {
      std::vector<int64_t> steps = all_steps();
      std::error_code ec;
      for (size_t i = 0; i + keep < steps.size(); ++i) fs::remove(path(steps[i]), ec);
    };
  }
  start_save(std::move(job));
}

}  // namespace tessel::checkpoints
