#pragma once
// Affine index maps: how an index-mapping primitive (slice, pad, concatenate, broadcast,
// static scatter, ...) reads its operands at one point of its output. Code generation
// (src/compiler/codegen.cpp) fuses such primitives into loop nests by composing these maps
// instead of storing intermediates; each primitive states its map beside its other rules
// (Primitive::index_map, ir/primitive.h), so the compiler keeps no list of them.
//
// Maps stay affine per dimension (coef * i + off of one loop variable i), so every test a
// primitive makes on the point is an interval test on a loop variable, which code
// generation decides once on the interior of the domain.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/params.h"
#include "tessel/array.h"

namespace tessel::ir {

/// coef * i<var> + off, or the constant off when var < 0 (i<var>: a loop variable).
struct Affine {
  int var = -1;
  int64_t coef = 0;
  int64_t off = 0;
  bool constant() const { return var < 0 || coef == 0; }
  /// s * this + shift.
  Affine scaled(int64_t s, int64_t shift) const { return {var, coef * s, off * s + shift}; }
};
/// The index of an element: one Affine per dimension of the array read.
using IndexMap = std::vector<Affine>;

/// lo <= index < hi.
struct RangeTest {
  Affine index;
  int64_t lo = 0;
  int64_t hi = 0;
};

/// IndexCase::operand of a value that is the index itself (iota): `at[0]` converted to the
/// output's dtype.
inline constexpr int kIndexValue = -1;

/// An offset known only when the kernel runs: the start of a window of `window` positions
/// along a dimension of `extent`, the value of a 0-d integer operand, counted from the end
/// when negative and clamped so that the window fits (ops::window_start: dynamic_slice's
/// starts).
struct DynamicOffset {
  int operand = -1;  ///< the operand holding it; -1: no dynamic offset in this dimension
  int64_t extent = 0;
  int64_t window = 0;
};

/// One way of computing an output element, used where every test of `when` holds.
struct IndexCase {
  std::vector<RangeTest> when = {};  ///< all must hold; empty: always
  int operand = 0;                   ///< the operand read (or kIndexValue)
  IndexMap at = {};                  ///< where it is read (one Affine per operand dimension)
  /// Non-empty: the element is scalar::<combine>(operand 0 at the output's own index, the
  /// value read) of src/backend/cpu/scalar.h (scatter-add into operand 0: "add").
  std::string combine = {};
  /// Non-empty: one entry per dimension of `at`, added to it at run time. Such a case reads
  /// a value the loop nest does not compute (the fusion pass stores the equation's
  /// operands), so its offsets enter no range test.
  std::vector<DynamicOffset> dynamic = {};
};

/// The index-map rule of a primitive: the element of the output at `out_index` is that of
/// the first case whose tests hold (at every index of the output, one does). Empty where the
/// parameters have no affine form (a reshape that merges dimensions, interior padding): the
/// equation then stays an unfused kernel.
using IndexMapFn = std::vector<IndexCase> (*)(const IndexMap& out_index, std::span<const Aval> in_avals,
                                             const Aval& out, const Params& params);

}  // namespace tessel::ir
