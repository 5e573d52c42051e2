#pragma once
// Running kernels on device streams.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/primitive.h"

namespace tessel::detail {

/// One kernel invocation. Avals and params live in a cache entry that `owner` keeps alive
/// until the kernel ran (the entry may be evicted, or clear_caches called, meanwhile).
struct KernelLaunch {
  const ir::Primitive* prim;
  const std::vector<Aval>* in_avals;
  const std::vector<Aval>* out_avals;
  const ir::Params* params;
  std::vector<std::shared_ptr<Buffer>> ins;
  std::vector<std::shared_ptr<Buffer>> outs;
  std::shared_ptr<const void> owner;
};

/// Enqueues the kernel on `dev`'s stream (inline when the stream is idle and `work_bytes`,
/// the bytes it reads and writes, are at most TESSEL_EAGER_INLINE_BYTES). Errors are
/// recorded in the output buffers and rethrown by whoever waits on them.
void launch_kernel(DeviceImpl* dev, size_t work_bytes, KernelLaunch launch);
/// The device an operation on concrete `ins` runs on: the committed device of its inputs
/// (all the same, else a ValueError naming `op`), else where the first non-scalar lives.
DeviceImpl* result_device(const std::string& op, std::span<const Array> ins);

}  // namespace tessel::detail
