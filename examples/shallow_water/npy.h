#pragma once
// Writes NumPy .npy files (format version 1.0), so results load with numpy.load.
#include <cstdint>
#include <string>
#include <vector>

namespace shallow_water {

/// Writes a C-ordered float32 or float64 array of `shape`; throws std::runtime_error if the
/// file cannot be written or the sizes disagree.
void write_npy(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape);
void write_npy(const std::string& path, const std::vector<double>& data, const std::vector<int64_t>& shape);

}  // namespace shallow_water
