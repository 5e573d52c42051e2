#pragma once
// Program-to-program simplification passes run by jit before building an executable.
#include "ir/program.h"

namespace tessel::compiler {

/// Replaces call equations (jit, checkpoint, custom_jvp/vjp: `inlinable_call`) by their equations.
ir::Program inline_calls(const ir::Program& p);
/// Evaluates effect-free equations whose inputs are all literals or small constants, when
/// their outputs are small (rank 0 becomes a literal, up to 64 elements a constant).
ir::Program fold_constants(const ir::Program& p);
/// Merges effect-free equations with the same primitive, parameters and inputs.
ir::Program eliminate_common_subexpressions(const ir::Program& p);
/// Lets dot_general read operands through transposes: dot_general(transpose(x), y) becomes
/// dot_general(x, y) with its batch and contracting dimensions renumbered, where the
/// transpose keeps the order of the operand's free dimensions (so the result is unchanged).
/// The product kernel reads strided operands in place (BLAS leading dimensions, one offset
/// per batch matrix), so attention's head split and key transpose are never copied. A
/// transpose of a product's result that moves the rhs's free dimensions before the lhs's
/// becomes the product with its operands swapped, when nothing else reads the result. A
/// transpose left without readers is dropped by eliminate_dead_code.
ir::Program fold_transposes_into_products(const ir::Program& p);
/// Drops equations whose outputs are unused, unless they have side effects; drops unused
/// constants.
ir::Program eliminate_dead_code(const ir::Program& p);
/// Contracts multiply-adds, as XLA's CPU compiler does (its LLVM target options allow FMA
/// fusion): a float32 or float64 `mul` whose result only one `add` or `sub` reads
/// (once, and no program output) becomes part of that sum, computed by the `fma` primitive
/// with one rounding (a difference negates the subtrahend or a factor first, which is
/// exact). A division by a literal whose reciprocal is normal counts as the product by that
/// reciprocal rounded, as XLA rewrites it (`x / c + d` is `fma(x, RN(1/c), d)`). Every later pass, schedule and kernel, fused or not, then computes the same
/// contracted program. With TESSEL_FP_CONTRACT=0 the program is returned unchanged.
ir::Program contract_multiply_adds(const ir::Program& p);
/// `p`'s inputs, constants, outputs and name, without its equations (for passes that
/// rebuild the equations).
ir::Program without_equations(const ir::Program& p);
/// All of the above, in that order (transposes are folded after inlining; multiply-adds are
/// contracted last). Without `fold`, constant folding is skipped: bodies
/// compiled inside a running kernel must not dispatch work to the (busy) device stream.
ir::Program simplify(const ir::Program& p, bool fold = true);

}  // namespace tessel::compiler
