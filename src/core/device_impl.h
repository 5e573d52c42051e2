#pragma once
#include <memory>
#include <vector>

#include "core/stream.h"
#include "tessel/device.h"

namespace tessel::detail {

/// A CPU device: its identity and its stream.
class DeviceImpl {
 public:
  DeviceImpl(int id, int process_index, int local_index)
      : id_(id), process_index_(process_index), local_index_(local_index), stream_(id) {}
  int id() const { return id_; }
  int process_index() const { return process_index_; }
  int local_index() const { return local_index_; }
  Stream& stream() { return stream_; }

 private:
  int id_, process_index_, local_index_;
  Stream stream_;
};

/// The devices of this process, made on first use from TESSEL_CPU_DEVICES (default 1).
std::vector<DeviceImpl*>& local_device_impls();
DeviceImpl* default_device();
/// Reads an integer environment variable, with a default.
long env_int(const char* name, long default_value);

}  // namespace tessel::detail
