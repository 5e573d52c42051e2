#pragma once
// C++ code generation for fused loop nests (docs/performance.md).
//
// A fusion group is a small program whose equations are element-wise or index-mapping
// primitives (slice, pad, concatenate, broadcast, static scatter, ...) and whose outputs
// (roots) share one shape, the iteration domain. Its kernel visits every point of the
// domain once and computes each root there by evaluating the equations backwards from the
// root: an element-wise equation at index i needs its operands at i; a slice at i needs its
// operand at start + stride * i; a concatenate or pad picks an operand by a range test. Each
// input is read where needed and each root is written once: no intermediate is stored.
//
// Index maps stay affine per dimension (coef * i_d + off), so range tests are interval
// tests on loop variables. The kernel runs a specialised body on the largest box where every
// test has a fixed answer (the stencil interior: branch-free, vectorisable) and a generic
// body with run-time tests elsewhere (halos and edges).
#include <cstdint>
#include <string>
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/program.h"
#include "ir/sharding_rule.h"

namespace tessel::compiler {

/// Whether code generation handles this equation inside a fusion group (a primitive with a
/// codegen rule, or with an index_map rule that has an affine form for its parameters;
/// supported dtypes).
bool can_generate(const ir::Equation& e);

/// An index-mapping equation that reads its operand at offsets known only when the kernel
/// runs (dynamic_slice, ir::DynamicOffset): the fusion pass stores its operands, so the
/// loop nest reads them from memory.
bool reads_at_run_time_offsets(const ir::Equation& e);

/// A reduction with a reduction_epilogue rule for its operand's dtype (reduce_sum/max/min of
/// a float operand) over trailing axes: fused as a group's epilogue (the group's outputs are
/// then all such reductions of one operand shape and axes).
bool is_fusible_reduction(const ir::Equation& e);

/// A reduction with a reduction_epilogue rule for its operand's dtype over leading axes
/// (axes 0 .. k-1 of an operand of rank > k, summed, maxed or minned: a bias or layer-norm
/// gradient's column sum): fused into the loop nest over its operand's shape beside that
/// shape's element-wise roots. Its kernel output is a row of accumulators (the epilogue's
/// acc_type) into which each call adds its rows; the fusion pass gives each fixed block of
/// rows its own row and combines them in block order (docs/performance.md).
bool is_column_reduction(const ir::Equation& e);

/// How partial results of the reduction `e` combine: what its sharding rule says of its
/// reduced factors (the collective that would combine them across devices), else kNone.
ir::Combine reduction_combine(const ir::Equation& e);

/// The iteration domain of a group (a reduction group iterates over its operand's shape)
/// and how many leading dimensions its outputs keep (all of them without reductions).
struct GroupShape {
  Shape domain;
  size_t kept;
};
GroupShape group_shape(const ir::Program& group);

/// Work per point of a group's interior body, for the fusion pass's recompute budget.
struct GroupCost {
  int64_t total = 0;  ///< Primitive::point_cost summed over every (value, index map) evaluated
  struct Var {
    int maps = 0;            ///< distinct index maps the value is evaluated at
    int64_t inclusive = 0;   ///< cost of those evaluations, with what they pulled in
  };
  std::unordered_map<const ir::VarNode*, Var> vars;  ///< values computed inside the group
};
GroupCost group_cost(const ir::Program& group);

/// How a group reads one of its inputs along the first dimension of its domain: at rows
/// i0 + c (i0 the domain's first index) for c in [min, max] at every read (`rows`), or
/// otherwise (another dimension's index, a rank-0 input, an offset known only at run time).
/// A read at a constant row or at a reversed or strided row counts by the rows i0 where it
/// happens (the range tests guarding it): an edge pad reads row 0 for i0 in [0, 2), c in
/// [-1, 0]; a reversal over the whole domain gives a range as wide as the domain. An input
/// read nowhere counts as rows with c = 0. The streaming pass (streaming.h) runs a
/// consumer's rows only after the rows of its producers that these offsets reach.
struct RowOffsets {
  bool rows = false;
  int64_t min = 0;
  int64_t max = 0;
};
/// Per input of `group` (in the order of its invars), from the reads its generated kernel
/// makes (the cases of index maps that can hold somewhere in the domain; range tests that
/// guard a read keep its offset, since the read happens only where they hold).
std::vector<RowOffsets> row_offsets(const ir::Program& group);

/// The rows [begin, end) of the domain of `group` (its first dimension) at none of whose
/// points the generated kernel reads an input marked in `late` (by position among its
/// invars; the cases of index maps that can hold there): the run around the middle row,
/// empty when the middle row reads one. The executable computes those rows of a loop nest
/// while the late inputs (halo rows) are still on their way.
std::pair<int64_t, int64_t> rows_without_reads(const ir::Program& group, const std::vector<char>& late);

/// Rows a call of a generated kernel starts at a multiple of when the compiler may vectorize
/// across rows (fused_kernel.h's row_alignment): a multiple of every vector length and
/// unrolling. A rank-1 kernel's vectorized interior segment starts and ends at multiples.
inline constexpr int64_t kRowAlignment = 64;

/// The C++ source of `extern "C" void <name>(void* const* bufs, int64_t r0, int64_t r1)`
/// computing the group's outputs at the points whose first domain index lies in [r0, r1)
/// (all of them for a rank-0 domain: [0, 1)). `bufs` holds the group's inputs, then its
/// outputs, as dense row-major arrays, then (kernels over a domain of rank >= 2) a pointer
/// to one row mask per input and output, or null: the kernel reads row r of a buffer that
/// ring_indexable allows and `ring_values` holds at row `r & mask` (-1 for a full-size
/// buffer; a ring of 2^k rows of a streamed chain's intermediate: 2^k - 1, so row r lives in
/// slot r mod 2^k); the other buffers' masks are ignored. Every output of `group` must have
/// the domain's shape.
std::string generate_kernel(const ir::Program& group, const std::string& name,
                            const std::unordered_set<const ir::VarNode*>& ring_values = {});

/// Per input then output of `group`: whether generate_kernel(group, name, ring_values)
/// indexes it at its row modulo its mask.
std::vector<bool> ring_buffers(const ir::Program& group, const std::unordered_set<const ir::VarNode*>& ring_values);

/// Whether generate_kernel's kernel over `shape` may index a buffer of type `buffer` (an
/// input, or an output when `output`) at its row modulo the buffer's row mask: a domain
/// and a buffer of rank >= 2 whose rows have kRowAlignment points or more (shorter rows may
/// be vectorized across rows, which a mask would prevent), and for an output no reduction
/// (its rows are the domain's).
inline bool ring_indexable(const GroupShape& shape, const Aval& buffer, bool output) {
  if (shape.domain.size() < 2 || buffer.shape.size() < 2 || (output && shape.kept != shape.domain.size())) return false;
  int64_t row_points = 1;
  for (size_t d = 1; d < shape.domain.size(); ++d) row_points *= shape.domain[d];
  return row_points >= kRowAlignment;
}

// ---- row-phased loop nests (docs/performance.md, "Normalizations") ----
//
// Fusion groups over one domain of rank >= 2 ("phases", each element-wise or reducing only
// the last dimension) whose later phases read what earlier ones computed only at the same row
// (a reduction, through broadcasts) or at the same point (an element-wise value) run as one
// loop nest that runs every phase over a row before the next row: the row stays in the first
// level cache between phases, so the input is read from memory once, reductions of a row
// live in registers and element-wise values between phases in a row buffer. A softmax
// (max, exp, sum, divide) or a layer norm (mean, variance, normalize) written with ordinary
// operations becomes one such loop nest, and so do their gradients.

/// Whether `group` can run as a phase of a row-phased loop nest over `domain` after phases
/// computing `earlier`: its domain is `domain` (rank >= 2), it reduces nothing or the last
/// dimension only (float sums, max, min), it has no range tests or run-time offsets, and it
/// reads each value of `earlier` at its own row (a reduction over the last dimension) or its
/// own point (an element-wise value of shape `domain`).
bool can_join_row_phases(const ir::Program& group, const Shape& domain,
                         const std::unordered_map<const ir::VarNode*, bool>& earlier);

/// The source of `extern "C" void <name>(void* const* bufs, int64_t r0, int64_t r1)` running
/// `phases` (in order; each accepted by can_join_row_phases after the earlier ones) over the
/// rows whose first index lies in [r0, r1). `bufs` holds `invars` (the values the phases read
/// that none computes), then `outvars` (the values computed that the rest of the program
/// reads); the other values stay in registers and row buffers.
std::string generate_row_phased_kernel(const std::vector<ir::Program>& phases, const std::vector<ir::Var>& invars,
                                       const std::vector<ir::Var>& outvars, const std::string& name);

/// The header every generated translation unit starts with (standard headers and the
/// element-wise scalar functions of src/backend/cpu/scalar.h).
std::string kernel_prelude();

}  // namespace tessel::compiler
