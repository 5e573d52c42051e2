#pragma once
// Arrays whose pieces live in other processes of a single-controller job (ARCHITECTURE.md
// "Processes"): the driver holds the handle, the workers that own the devices hold the
// pieces under an id. The core only keeps the id; what needs the workers goes through the
// RemotePieces interface, implemented once by the driver in src/distributed/controller.cpp
// and installed by distributed::initialize() (the layers below do not know about MPI).
#include <cstdint>
#include <memory>
#include <vector>

namespace tessel::detail {

class Buffer;
class ConcreteArray;

/// The id under which worker processes `processes` hold their pieces of one array.
/// Destroying the last reference frees those pieces there, asynchronously.
struct RemoteRef {
  uint64_t id = 0;
  std::vector<int> processes;
  RemoteRef(uint64_t id, std::vector<int> processes) : id(id), processes(std::move(processes)) {}
  RemoteRef(const RemoteRef&) = delete;
  RemoteRef& operator=(const RemoteRef&) = delete;
  ~RemoteRef();
};

/// What the core asks of the workers about arrays whose pieces they hold.
class RemotePieces {
 public:
  virtual ~RemotePieces() = default;
  /// Frees the pieces of `id` on `processes` (never throws).
  virtual void release(uint64_t id, const std::vector<int>& processes) const noexcept = 0;
  /// Waits until every remote piece of `a` is computed; rethrows a worker's error.
  virtual void wait(const ConcreteArray& a) const = 0;
  /// Fills `shards[pos]` for each listed mesh position with a local buffer holding a copy
  /// of that remote piece.
  virtual void fetch(const ConcreteArray& a, const std::vector<int>& positions,
                     std::vector<std::shared_ptr<Buffer>>& shards) const = 0;
};
/// Installs the driver's implementation (distributed::initialize on the driver of a
/// single-controller job).
void install_remote_pieces(const RemotePieces& r);
/// The installed implementation, or null outside the driver of a single-controller job.
const RemotePieces* remote_pieces();

}  // namespace tessel::detail
