#include "core/remote.h"

namespace tessel::detail {

RemoteHooks& remote_hooks() {
  static RemoteHooks h;
  return h;
}

RemoteRef::~RemoteRef() {
  if (auto release = remote_hooks().release) release(id, processes);
}

}  // namespace tessel::detail
