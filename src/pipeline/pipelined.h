#pragma once
// What the driver (pipelined.cpp) and the workers (worker.cpp) of a pipeline agree on.

namespace tessel::pipeline::detail {

/// The start of the error of a worker that stopped its step because another worker failed
/// (the driver reports the failure itself instead).
inline constexpr const char* kStoppedByPeer = "pipelined: stopped because worker";

}  // namespace tessel::pipeline::detail
