#pragma once
// How the nested programs of a control-flow equation (cond's branches, while's cond and
// body, scan's body) connect to the equation's operands and results, declared by the
// primitive so that passes which work inside nested programs (the SPMD partitioner,
// src/sharding/partition_nested.cpp) need not know each primitive's parameter layout.
//
// A loop keeps a state of `carries.size()` values: carry j starts as operand
// `carries[j].init` and ends as result `carries[j].result`. Every region input reads an
// operand, a carry, or one step's slice of an operand (scan's xs: the operand without its
// leading, scanned dimension); every region output writes a carry, a result, or one step's
// slice of a result (scan's ys), or nothing (while's predicate).
#include <cstddef>
#include <vector>

#include "ir/params.h"

namespace tessel::ir {

struct Port {
  enum Kind {
    kOperand,       ///< operand `index`
    kOperandSlice,  ///< one step's slice of operand `index` (its leading dimension scanned)
    kCarry,         ///< loop carry `index`
    kResult,        ///< result `index`
    kResultSlice,   ///< one step's slice of result `index` (stacked along its leading dimension)
    kPredicate,     ///< the loop's predicate (a boolean scalar every device must agree on)
  };
  Kind kind;
  size_t index = 0;
};

struct Region {
  ProgramRef program;
  std::vector<Port> inputs;   ///< one per program input
  std::vector<Port> outputs;  ///< one per program output
};

struct Carry {
  size_t init;    ///< the operand holding its initial value
  size_t result;  ///< the result holding its final value
};

struct Regions {
  std::vector<Region> regions;
  std::vector<Carry> carries;
  /// The equation's parameters with its programs replaced by `programs` (in the order of
  /// `regions`), for the same operands with other (per-device) shapes.
  Params (*with_programs)(const Params& params, const std::vector<ProgramRef>& programs) = nullptr;
};

/// The regions of an equation with `num_operands` operands and these parameters.
using RegionsFn = Regions (*)(size_t num_operands, const Params& params);

}  // namespace tessel::ir
