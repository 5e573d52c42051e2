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
/// "drop"/"clip" for scatter, and gather["fill"]'s optional fill_value, a Scalar of the
/// operand's dtype); indexing.cpp describes their semantics.
extern const ir::Primitive& gather_p;
extern const ir::Primitive& scatter_p;

/// slice[start_indices, limit_indices, strides](operand) and concatenate[dimension](*operands)
/// (shape.cpp): the compiler's product merging (compiler/product_merging.cpp) emits them.
extern const ir::Primitive& slice_p;
extern const ir::Primitive& concatenate_p;

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

// ---- out-of-bounds modes of the jnp-level functions (IndexOptions) ----

/// IndexOptions::mode: "fill" (alias "drop"), "clip", "wrap", "promise_in_bounds".
enum class OutOfBounds { fill, clip, wrap, promise_in_bounds };
/// The mode `o` asks for (`dflt` when empty); an unknown one is an error naming `op`.
OutOfBounds index_mode(const std::string& op, const IndexOptions& o, OutOfBounds dflt);
/// Integer indices `i` into an axis of size `n`, reduced modulo n into [0, n) ("wrap").
Array wrap_indices(const Array& i, int64_t n);
/// Gather params `p` made to read o.fill_value (JAX's default for `dtype` when unset) at
/// out-of-bounds indices.
Params with_fill(Params p, const IndexOptions& o, DType dtype);

}  // namespace tessel::ops
