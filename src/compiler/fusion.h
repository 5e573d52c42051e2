#pragma once
// The fusion pass (docs/performance.md): groups element-wise and index-mapping equations
// into loop nests, generates one C++ kernel per group, compiles them (kernel_cache.h) and
// replaces each group by one `fused` equation.
#include <cstdint>

#include "ir/program.h"

namespace tessel::compiler {

/// Knobs of the pass, read from the environment at each call.
struct FusionOptions {
  /// Groups whose domain has fewer elements stay unfused kernels: compiling would cost more
  /// than it saves (TESSEL_FUSION_MIN_ELEMENTS, default 16384).
  int64_t min_elements = 16384;
  /// Work per point a group may spend recomputing values it reads at several offsets
  /// before the most recomputed one is stored instead (TESSEL_FUSION_MAX_POINT_COST,
  /// default 256; the unit is one arithmetic operation).
  int64_t max_point_cost = 256;
  /// Most outputs one loop nest computes (TESSEL_FUSION_MAX_OUTPUTS, default 8).
  int64_t max_outputs = 8;
  /// Chains of loop nests over the same rows run band by band (streaming.h;
  /// TESSEL_FUSION_STREAM, default on).
  bool stream = true;
  /// Bytes of one band of a streamed chain (TESSEL_FUSION_STREAM_BAND_BYTES, default 512 KiB).
  int64_t stream_band_bytes = 512 << 10;
  /// Rows per block of a streamed chain; 0 (the default): one block per thread. Tests set
  /// it to run many block edges on a machine of few cores.
  int64_t stream_block_rows = 0;
};
FusionOptions fusion_options();

/// `p` with fusion groups replaced by `fused` equations whose kernels are compiled and
/// loaded, and chains of them that can stream replaced by `fused_chain` equations
/// (streaming.h) when `options.stream`. Returns `p` unchanged when code generation is off (TESSEL_DISABLE_CODEGEN=1, no
/// compiler), when nothing fuses, or when compiling fails (with a warning).
ir::Program fuse(const ir::Program& p, const FusionOptions& options = fusion_options());

}  // namespace tessel::compiler
