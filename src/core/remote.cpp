#include "core/remote.h"

#include <atomic>

namespace tessel::detail {

namespace {
std::atomic<const RemotePieces*> g_remote{nullptr};
}

void install_remote_pieces(const RemotePieces& r) { g_remote.store(&r); }
const RemotePieces* remote_pieces() { return g_remote.load(std::memory_order_acquire); }

RemoteRef::~RemoteRef() {
  if (const RemotePieces* r = remote_pieces()) r->release(id, processes);
}

}  // namespace tessel::detail
