// Fixture for scripts/check-layers: includes of its own and lower layers pass.
#include "core/value.h"
#include "ir/program.h"
#include "ops/fine.h"
