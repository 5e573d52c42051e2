#pragma once
// Merging matrix products that do the same kind of work into one larger product
// (docs/performance.md, "One product for q, k and v").
#include <cstdint>

#include "ir/program.h"

namespace tessel::compiler {

/// A merge is made only when the operands it copies into a concatenation have at most this
/// many elements per 256 floating-point operations of the products merged (1/256): a copied
/// element costs about as much as 50–100 operations of a product running at a core's
/// peak, so the copies stay within a few percent of the products' time. Operands already
/// concatenated in the same order elsewhere in the program cost nothing.
inline constexpr int64_t kMinFlopsPerCopiedElement = 256;

/// Merges the dot_generals of `p` that share work, in place, repeatedly until none is
/// left; returns whether any merged:
/// - products with the same dimension numbers that read one operand (the same variable on
///   the same side) and differ in the other, whose shapes agree except along its last free
///   dimension, become one product over the others concatenated along that dimension,
///   followed by one slice per original result (q, k and v from one normalized input;
///   the weight gradients h^T dq, h^T dk, h^T dv);
/// - products with the same dimension numbers and result shape that are only summed
///   (a tree of `add`s that nothing else reads) become one product over both operands
///   concatenated along their last contracting dimension (the input gradient
///   dq Wq^T + dk Wk^T + dv Wv^T).
/// Operands are concatenated in the order of an existing concatenation of the same
/// operands where there is one (so that the forward and backward passes share it after
/// common-subexpression elimination), else in the order they are defined. Merges that would
/// copy more than kMinFlopsPerCopiedElement allows, or that would have to move a product
/// before an operand is computed or after its result is read, are not made. Common
/// subexpressions are eliminated after each merge (the same concatenation made twice).
bool merge_products(ir::Program& p);

}  // namespace tessel::compiler
