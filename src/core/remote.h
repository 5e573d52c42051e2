#pragma once
// Arrays whose pieces live in other processes of a single-controller job (ARCHITECTURE.md
// "Processes"): the driver holds the handle, the workers that own the devices hold the
// pieces under an id. The core only keeps the id and calls the hooks that
// src/distributed/controller.cpp installs (the layers below do not know about MPI).
#include <cstdint>
#include <memory>
#include <vector>

namespace tessel::detail {

class Buffer;
class ShardedArray;

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

struct RemoteHooks {
  /// Frees the pieces of `id` on `processes` (never throws).
  void (*release)(uint64_t id, const std::vector<int>& processes) = nullptr;
  /// Waits until every remote piece of `a` is computed; rethrows a worker's error.
  void (*wait)(const ShardedArray& a) = nullptr;
  /// Fills `shards[pos]` for each listed mesh position with a local buffer holding a copy
  /// of that remote piece.
  void (*fetch)(const ShardedArray& a, const std::vector<int>& positions,
                std::vector<std::shared_ptr<Buffer>>& shards) = nullptr;
};
RemoteHooks& remote_hooks();

}  // namespace tessel::detail
