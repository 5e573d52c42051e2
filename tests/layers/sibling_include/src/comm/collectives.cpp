// Fixture for scripts/check-layers: one seed module reaching into another of the same layer.
#include "pipeline/worker.h"
