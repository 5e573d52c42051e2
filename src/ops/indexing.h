#pragma once
// Internal declarations shared by the indexing primitives (indexing.cpp) and NumPy-style
// indexing (numpy_indexing.cpp), which builds gather and scatter equations from them.
#include <span>
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace tessel::ops {

/// gather(operand, *indices) and scatter[mode](operand, update, *indices), with the
/// parameters of indexed_params (plus an optional out_of_bounds: "clip"/"fill" for gather,
/// "drop"/"clip" for scatter, used by their transposes); indexing.cpp describes their semantics.
extern const ir::Primitive& gather_p;
extern const ir::Primitive& scatter_p;

/// The parameters gather and scatter share: indexed `axes`, where the batch dimensions go
/// in the indexed shape (`batch_pos`), and the strided window on the other dimensions.
Params indexed_params(const Axes& axes, int64_t batch_pos, const Shape& start, const Shape& limit,
                      const Shape& strides);

/// The indexed view of an operand: the indexed shape, and per dimension of it the operand
/// offset step (window dims) and flat batch-index step (dims of B).
struct IndexedView {
  Shape shape;
  std::vector<int64_t> xstep, bstep;
  int64_t xbase = 0;
};

/// Validates gather/scatter operands and parameters (errors name `op`) and returns their
/// indexed view.
IndexedView indexed_view(const std::string& op, const Aval& x, std::span<const Aval> idx, const Params& p);

/// Rejects boolean masks (with advice) and non-integer index dtypes, naming `op`.
void check_index_dtype(const std::string& op, DType d);

}  // namespace tessel::ops
