#pragma once
// Fixture for scripts/check-layers: a header the sibling fixture includes.
#include "core/array_impl.h"
