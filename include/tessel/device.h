#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "tessel/export.h"

namespace tessel {

namespace detail {
class DeviceImpl;
}

/// A device that holds array buffers and runs computations: here a (virtual) CPU device
/// with its own stream. Cheap to copy; compares by identity.
class TESSEL_API Device {
 public:
  Device() = default;
  explicit Device(detail::DeviceImpl* impl) : impl_(impl) {}
  /// Global id, unique across processes.
  int id() const;
  /// The process that owns the device.
  int process_index() const;
  /// "cpu".
  std::string platform() const;
  /// "TFRT_CPU_3"-like description: "cpu:3".
  std::string to_string() const;
  bool valid() const { return impl_ != nullptr; }
  detail::DeviceImpl* impl() const { return impl_; }
  bool operator==(const Device& o) const { return impl_ == o.impl_; }
  bool operator!=(const Device& o) const { return impl_ != o.impl_; }

 private:
  detail::DeviceImpl* impl_ = nullptr;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

/// All devices of the job (`TESSEL_CPU_DEVICES` virtual CPU devices per process).
TESSEL_API std::vector<Device> devices();
/// The devices owned by this process.
TESSEL_API std::vector<Device> local_devices();
TESSEL_API int device_count();
TESSEL_API int local_device_count();
/// This process's index in the job (0 alone).
TESSEL_API int process_index();
/// Number of processes in the job (1 alone).
TESSEL_API int process_count();

}  // namespace tessel
