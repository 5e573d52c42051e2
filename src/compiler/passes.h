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
/// Rewrites float32/float64 arithmetic with literal operands as XLA's algebraic simplifier
/// does before it compiles (so jit rounds as `jax.jit` does): `pow(a, c)` with c = 2, 3, -1
/// becomes `a * a`, `a * (a * a)`, `1 / a`; `a - c` becomes `a + (-c)`, `a / c` becomes
/// `a * RN(1/c)` (when c and its reciprocal are normal), literals move to the right of sums
/// and products, and `(a + c1) + c2`, `(a * c1) * c2` and `(c1 - a) + c2` become
/// `a + RN(c1 + c2)`, `a * RN(c1 * c2)` and `RN(c1 + c2) - a`, the literals combined in the
/// dtype. `jax.nn.initializers.normal(5.0)` under `jax.jit` is `erf_inv(u) * RN(sqrt(2) * 5)`,
/// not `(erf_inv(u) * sqrt(2)) * 5`. With TESSEL_FP_CONTRACT=0 the program is returned unchanged.
ir::Program fold_literal_arithmetic(const ir::Program& p);
/// Contracts multiply-adds, as XLA's CPU compiler does (its LLVM target options allow FMA
/// fusion): a float32 or float64 `mul` whose result only one `add` or `sub` reads
/// (once, and no program output) becomes part of that sum, computed by the `fma` primitive
/// with one rounding (a difference negates the subtrahend or a factor first, which is
/// exact). Run after fold_literal_arithmetic, which makes `x / c + d` `fma(x, RN(1/c), d)` as
/// XLA does. Every later pass, schedule and kernel, fused or not, then computes the same
/// contracted program. With TESSEL_FP_CONTRACT=0 the program is returned unchanged.
ir::Program contract_multiply_adds(const ir::Program& p);
/// `p`'s inputs, constants, outputs and name, without its equations (for passes that
/// rebuild the equations).
ir::Program without_equations(const ir::Program& p);
/// All of the above, in that order (transposes are folded after inlining; literal arithmetic is
/// rewritten after common subexpressions merge, and multiply-adds are contracted last). Without `fold`, constant folding is skipped: bodies
/// compiled inside a running kernel must not dispatch work to the (busy) device stream.
ir::Program simplify(const ir::Program& p, bool fold = true);

}  // namespace tessel::compiler
