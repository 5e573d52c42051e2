#pragma once
// Piece assembly (src/core/pieces.cpp); the assembling direction is ConcreteArray::gathered.
#include "tessel/array.h"
#include "tessel/sharding.h"

namespace tessel::detail {

/// The pieces of `x` (a concrete value, assembled first if it is laid out) laid out by the
/// named sharding `s`: a copy per device, padding filled with zeros. Only the devices of
/// this process get their piece: on a mesh that spans processes every process passes the
/// same global value (multi-controller) and keeps its own pieces; the other devices'
/// buffers stay null.
Array split_into_pieces(const Array& x, const Sharding& s);

}  // namespace tessel::detail
