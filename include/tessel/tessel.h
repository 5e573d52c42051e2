#pragma once
// tessel: JAX's execution model for C++. Include this one header.
#include "tessel/array.h"
#include "tessel/control_flow.h"
#include "tessel/device.h"
#include "tessel/dtype.h"
#include "tessel/error.h"
#include "tessel/fft.h"
#include "tessel/jit.h"
#include "tessel/ops.h"
#include "tessel/random.h"
#include "tessel/sharding.h"
#include "tessel/transforms.h"
#include "tessel/tree.h"
