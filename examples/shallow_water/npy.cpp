// NPY 1.0: magic "\x93NUMPY", version 1.0, a little-endian uint16 header length, then a
// Python-literal dict padded with spaces to a multiple of 64 bytes (ending in '\n'), then
// the raw little-endian data.
#include "npy.h"

#include <fstream>
#include <stdexcept>

namespace shallow_water {
namespace {

void write(const std::string& path, const void* data, size_t count, size_t itemsize, const char* descr,
           const std::vector<int64_t>& shape) {
  size_t expected = 1;
  std::string dims;  // "3, 4", or "3," for one dimension (a Python tuple literal)
  for (size_t i = 0; i < shape.size(); ++i) {
    expected *= size_t(shape[i]);
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  }
  if (shape.size() == 1) dims += ',';
  if (expected != count)
    throw std::runtime_error("write_npy: " + std::to_string(count) + " values do not fill the shape (" + dims + ")");
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("write_npy: cannot open " + path + " for writing");
  const uint16_t len = uint16_t(header.size());
  const char lead[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const char len_le[2] = {char(len & 0xff), char(len >> 8)};
  out.write(lead, 8).write(len_le, 2).write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char*>(data), std::streamsize(count * itemsize));
  if (!out) throw std::runtime_error("write_npy: failed writing " + path);
}

}  // namespace

void write_npy(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape) {
  write(path, data.data(), data.size(), sizeof(float), "<f4", shape);
}

void write_npy(const std::string& path, const std::vector<double>& data, const std::vector<int64_t>& shape) {
  write(path, data.data(), data.size(), sizeof(double), "<f8", shape);
}

}  // namespace shallow_water
