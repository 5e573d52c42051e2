#pragma once
// The compiled kernel of a `fused` equation (fusion.cpp) as a parameter object, shared with
// the streaming pass (streaming.cpp), which runs several of them over bands of rows.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/kernel_cache.h"
#include "ir/params.h"
#include "ir/program.h"

namespace tessel::compiler {

/// A generated loop nest: computes rows [r0, r1) of its domain's first dimension
/// (codegen.h's generate_kernel); `bufs` holds its inputs, then its outputs, then its row
/// masks (or null: full-size buffers).
using KernelFnPtr = void (*)(void* const* bufs, int64_t r0, int64_t r1);

/// A loaded kernel (its library stays loaded while it lives), the `kernel` parameter of a
/// `fused` equation.
class FusedKernel final : public ir::ParamObject {
 public:
  /// `ring_buffers`: per input then output, whether the kernel indexes it at its row modulo
  /// its mask (codegen.h's ring_buffers; empty: none). `columns`: per output, how a column
  /// reduction's rows of accumulators combine (codegen.h's is_column_reduction), kNone for
  /// the other outputs (empty: none).
  FusedKernel(std::shared_ptr<KernelLibrary> lib, std::string name, GroupShape shape,
              std::vector<bool> ring_buffers = {}, std::vector<ir::Combine> columns = {});
  size_t hash() const override;
  bool equals(const ir::ParamObject& o) const override;
  std::string to_string() const override { return name_; }
  /// Throws ValueError: machine code does not travel to another process.
  void write(ir::Writer&) const override;
  KernelFnPtr fn() const { return fn_; }
  const GroupShape& shape() const { return shape_; }
  /// Whether buffer `position` (inputs, then outputs) may be a ring of rows.
  bool ring_buffer(size_t position) const { return position < ring_buffers_.size() && ring_buffers_[position]; }
  /// How output `o`'s per-block rows combine when it is a column reduction, else kNone.
  ir::Combine column(size_t o) const { return o < columns_.size() ? columns_[o] : ir::Combine::kNone; }
  /// Whether some output is a column reduction: the kernel then runs whole, by fixed blocks
  /// of rows (never streamed or split around a halo exchange).
  bool has_columns() const { return !columns_.empty(); }

 private:
  std::shared_ptr<KernelLibrary> lib_;
  KernelFnPtr fn_;
  std::string name_;
  GroupShape shape_;
  std::vector<bool> ring_buffers_;
  std::vector<ir::Combine> columns_;
};

/// Whether `e` is a `fused` equation (one generated loop nest).
bool is_fused(const ir::Equation& e);

/// Rows that every call of a loop nest over `shape` starts at a multiple of (and ends at a
/// multiple of, or at the last row), so that its values do not depend on how its rows are
/// split between calls: the compiler may vectorize a loop nest with short rows across rows
/// (a rank-1 domain always is), and libmvec's transcendental functions may round a lane of
/// a vector and a lone element differently (and a vector whose lane needs a special case
/// may go to the scalar path whole). kRowAlignment rows when a row has fewer than that
/// many points, else 1.
int64_t row_alignment(const GroupShape& shape);

// ---- running part of a loop nest's rows (overlapping a halo exchange) ----

/// Rows [begin, end) of the `rows` of a `fused` or `fused_chain` step that read none of its
/// inputs marked late: the executable computes them while those inputs (received halo rows)
/// are on their way, and the rest once they have arrived.
struct RowSplit {
  int64_t begin = 0, end = 0, rows = 0;
};
/// The split of equation `e` (a `fused` loop nest keeping its rows, or a `fused_chain`) for
/// the inputs marked in `late` (by position among its inputs); nullopt for other
/// equations and when no row can run without them. Calls start at multiples of the loop
/// nests' row alignment, so the values do not depend on the split.
std::optional<RowSplit> split_rows(const ir::Equation& e, const std::vector<char>& late);
/// Runs rows [r0, r1) of a step split_rows split (its kernel call's buffers); the rows of
/// all three parts together equal one full run, bit for bit.
void run_step_rows(const ir::Primitive& prim, const ir::KernelCall& c, int64_t r0, int64_t r1);
/// Runs rows [r0, r1) of a `fused` loop nest over the intra-op arena (r0 a multiple of its
/// row alignment).
void run_fused_rows(const ir::KernelCall& c, int64_t r0, int64_t r1);

}  // namespace tessel::compiler
