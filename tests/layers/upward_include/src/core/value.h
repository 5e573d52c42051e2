#pragma once
// Fixture for scripts/check-layers: a core header (layer 1) that includes the compiler
// (layer 7). The check must reject it.
#include "compiler/executable.h"
