#pragma once
// Shape primitives other passes emit (shape.cpp).
#include "ir/primitive.h"

namespace tessel::ops {

/// reshape[new_sizes](operand): the operand's elements in row-major order under a new shape
/// (the fusion pass moves column sums before a reshape, compiler/fusion.cpp).
extern const ir::Primitive& reshape_p;

}  // namespace tessel::ops
