#include <cstdlib>
#include <mutex>
#include <string>

#include "core/buffer.h"
#include "core/device_impl.h"
#include "tessel/error.h"

namespace tessel {
namespace detail {

long env_int(const char* name, long default_value) {
  const char* v = std::getenv(name);
  if (!v || !*v) return default_value;
  char* end = nullptr;
  long r = std::strtol(v, &end, 10);
  if (*end != '\0')
    throw ValueError(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return r;
}

std::vector<DeviceImpl*>& local_device_impls() {
  // Devices live until exit; their streams are joined by the static destructor below.
  static std::vector<std::unique_ptr<DeviceImpl>> owned;
  static std::vector<DeviceImpl*> devices = [] {
    long n = env_int("TESSEL_CPU_DEVICES", 1);
    if (n < 1 || n > 1024)
      throw ValueError("TESSEL_CPU_DEVICES=" + std::to_string(n) + " is out of range; use 1 to 1024");
    std::vector<DeviceImpl*> d;
    for (long i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<DeviceImpl>(int(i), 0, int(i)));
      d.push_back(owned.back().get());
    }
    // Pending work finishes before static objects it may use are destroyed.
    std::atexit([] {
      for (auto& dev : owned) dev->stream().synchronize();
    });
    return d;
  }();
  return devices;
}

DeviceImpl* default_device() { return local_device_impls()[0]; }

}  // namespace detail

int Device::id() const { return impl_->id(); }
int Device::process_index() const { return impl_->process_index(); }
std::string Device::platform() const { return "cpu"; }
std::string Device::to_string() const { return impl_ ? "cpu:" + std::to_string(impl_->id()) : "<no device>"; }

std::vector<Device> devices() { return local_devices(); }

std::vector<Device> local_devices() {
  std::vector<Device> out;
  for (auto* d : detail::local_device_impls()) out.emplace_back(d);
  return out;
}

int device_count() { return int(devices().size()); }
int local_device_count() { return int(detail::local_device_impls().size()); }
int process_index() { return 0; }
int process_count() { return 1; }

}  // namespace tessel
