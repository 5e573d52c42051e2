#pragma once
// A count of the bytes the runtime copies only to move a value from one buffer to another
// (not to compute one), so that tests can check that loops copy no carry per iteration.
#include <cstddef>

namespace tessel::detail {

/// Counts `nbytes` copied from one buffer into another only to move a value: a loop carry
/// moved into or out of the loop's buffers, a program output that is one of its inputs or
/// constants.
void count_value_copy(size_t nbytes);
/// Bytes counted by count_value_copy since the process started.
size_t value_copy_bytes();

}  // namespace tessel::detail
