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
  /// The budget of a group whose domain takes at most kSmallDomainBytes (the lower of the
  /// two applies; TESSEL_FUSION_SMALL_POINT_COST, default 32): a step of such arrays stays
  /// in cache, and its stored values live in rings of rows of a streamed chain, so storing
  /// a value read at several offsets costs less than recomputing it. The same whether
  /// chains stream or not, so that both run the same loop nests (and give the same bits).
  int64_t small_point_cost = 32;
  /// A value that several loop nests of small domains would each compute inline (the
  /// common subexpression of different loop nests) is stored once, in a ring of rows when
  /// chains stream (default on; tests turn it off to compare).
  bool store_shared_values = true;
  /// Matrix products that share an operand, or that are only summed, become one larger
  /// product first (product_merging.h; default on; tests turn it off to compare).
  bool merge_products = true;
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

/// Loop nests whose domain (its points times the bytes of an element of the root) takes at
/// most this many bytes take FusionOptions::small_point_cost: measured on the shallow-water step, storing more paid at
/// 360x180 and 480x240 (arrays of 0.26 and 0.46 MB) and not at 1800x900 (6.5 MB), where
/// fewer, heavier loop nests overlap the memory stream with arithmetic.
inline constexpr int64_t kSmallDomainBytes = int64_t(1) << 20;

/// `p` with products merged (FusionOptions::merge_products), then fusion groups replaced by `fused` equations whose kernels are compiled and
/// loaded, and chains of them that can stream replaced by `fused_chain` equations
/// (streaming.h) when `options.stream`. Returns `p` unchanged when code generation is off (TESSEL_DISABLE_CODEGEN=1, no
/// compiler), when nothing fuses, or when compiling fails (with a warning).
ir::Program fuse(const ir::Program& p, const FusionOptions& options = fusion_options());

}  // namespace tessel::compiler
