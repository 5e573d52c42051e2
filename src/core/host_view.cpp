// host_view: the memory of a single-buffer array, kept alive by its Buffer.
#include "tessel/host_view.h"

#include "core/array_impl.h"
#include "core/buffer.h"

namespace tessel {

std::optional<HostView> host_view(const Array& x) {
  const detail::ConcreteArray* c = detail::as_concrete(x);
  if (!c || !c->on_one_local_device() || !c->buffer()) return std::nullopt;
  const std::shared_ptr<detail::Buffer>& b = c->buffer();
  b->check_not_donated();
  b->wait();
  return HostView{b->data(), x.shape(), x.dtype(), std::shared_ptr<const void>(b, b->data())};
}

}  // namespace tessel
