#include <mutex>
#include <string>

#include "core/buffer.h"
#include "core/config.h"
#include "core/device_impl.h"
#include "core/lifetime.h"
#include "tessel/error.h"

namespace tessel {
namespace detail {

std::vector<DeviceImpl*>& local_device_impls() {
  // Never destroyed: arrays and meshes refer to their devices until the process ends. Exit's
  // teardown waits for the work queued on them and stops their streams (core/lifetime.h).
  static std::vector<DeviceImpl*>& devices = *[] {
    const int64_t n = config::get_int(config::kCpuDevices);  // 1 to 1024
    auto* d = new std::vector<DeviceImpl*>;
    for (int64_t i = 0; i < n; ++i) d->push_back(new DeviceImpl(int(i), 0, int(i)));
    at_exit(ExitPhase::kDevices, [d] {
      for (DeviceImpl* dev : *d) dev->own_stream().synchronize();
    });
    at_exit(ExitPhase::kStop, [d] {
      for (DeviceImpl* dev : *d) dev->own_stream().stop();
    });
    return d;
  }();
  return devices;
}

DeviceImpl* default_device() { return local_device_impls()[0]; }

namespace {
thread_local PrivateStreams* t_private_streams = nullptr;
}

PrivateStreams::~PrivateStreams() { synchronize(); }

void PrivateStreams::synchronize() {
  std::vector<Stream*> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [dev, s] : streams_) all.push_back(s.get());
  }
  for (Stream* s : all) s->synchronize();
}

bool PrivateStreams::idle() {
  std::lock_guard lock(mu_);
  for (auto& [dev, s] : streams_)
    if (!s->idle()) return false;
  return true;
}

Stream& PrivateStreams::get(DeviceImpl* device) {
  std::lock_guard lock(mu_);
  for (auto& [dev, s] : streams_)
    if (dev == device) return *s;
  streams_.emplace_back(device, std::make_unique<Stream>(device->id()));
  return *streams_.back().second;
}

ScopedPrivateStreams::ScopedPrivateStreams(PrivateStreams* streams) : previous_(t_private_streams) {
  t_private_streams = streams;
}
ScopedPrivateStreams::~ScopedPrivateStreams() { t_private_streams = previous_; }

const Sharding& DeviceImpl::sharding() {
  std::call_once(sharding_once_, [this] { sharding_ = SingleDeviceSharding(Device(this)); });
  return sharding_;
}

namespace {
long eager_inline_bytes() {
  static const long inline_bytes = config::get_int(config::kEagerInlineBytes);
  return inline_bytes;
}

/// Whether work of `work_bytes` (up to SIZE_MAX: a loop of unknown steps) is small enough
/// to run on the caller's thread.
bool small_work(size_t work_bytes) {
  const long limit = eager_inline_bytes();
  return limit >= 0 && work_bytes <= static_cast<unsigned long>(limit);
}
}  // namespace

void run_on_stream(DeviceImpl* dev, size_t work_bytes, Stream::Task task) {
  if (small_work(work_bytes)) dev->stream().run_inline_or_enqueue(std::move(task));
  else dev->stream().enqueue(std::move(task));
}

bool run_inline_if_idle(DeviceImpl* dev, size_t work_bytes, void (*fn)(void*), void* ctx) {
  return small_work(work_bytes) && dev->stream().run_if_idle(fn, ctx);
}

Stream& DeviceImpl::stream() {
  if (t_private_streams && stream_) return t_private_streams->get(this);
  if (!stream_)
    throw Error("internal: device cpu:" + std::to_string(id_) + " belongs to process " +
                std::to_string(process_index_) + " and has no stream in this process");
  return *stream_;
}

namespace {
struct Job {
  int process_index = 0;
  int process_count = 1;
  std::vector<std::unique_ptr<DeviceImpl>> remote;  // other processes' devices
  std::vector<DeviceImpl*> all;                     // empty until join_job
};
Job& job() {
  static auto* j = new Job;  // never destroyed, like the devices it lists
  return *j;
}
}  // namespace

const std::vector<DeviceImpl*>& global_device_impls() {
  const Job& j = job();
  return j.all.empty() ? local_device_impls() : j.all;
}

void join_job(int process_index, const std::vector<int>& devices_per_process) {
  Job& j = job();
  auto& local = local_device_impls();
  if (devices_per_process.at(size_t(process_index)) != int(local.size()))
    throw Error("internal: join_job: device count of process " + std::to_string(process_index) + " disagrees");
  j.process_index = process_index;
  j.process_count = int(devices_per_process.size());
  j.all.clear();
  j.remote.clear();
  int id = 0;
  for (int p = 0; p < j.process_count; ++p)
    for (int i = 0; i < devices_per_process[size_t(p)]; ++i, ++id) {
      if (p == process_index) {
        local[size_t(i)]->set_identity(id, p);
        j.all.push_back(local[size_t(i)]);
      } else {
        j.remote.push_back(std::make_unique<DeviceImpl>(id, p, i, /*local=*/false));
        j.all.push_back(j.remote.back().get());
      }
    }
}

}  // namespace detail

namespace {
// Printing and comparing an empty Device works; everything else names the mistake.
detail::DeviceImpl& checked(detail::DeviceImpl* impl, const char* accessor) {
  if (!impl)
    throw ValueError(std::string("Device::") + accessor +
                     ": this Device is empty (default-constructed); take one from ts::devices() or "
                     "ts::local_devices()");
  return *impl;
}
}  // namespace

int Device::id() const { return checked(impl_, "id").id(); }
int Device::process_index() const { return checked(impl_, "process_index").process_index(); }
std::string Device::platform() const {
  checked(impl_, "platform");
  return "cpu";
}
std::string Device::to_string() const { return impl_ ? "cpu:" + std::to_string(impl_->id()) : "<no device>"; }

std::vector<Device> devices() {
  std::vector<Device> out;
  for (auto* d : detail::global_device_impls()) out.emplace_back(d);
  return out;
}

std::vector<Device> local_devices() {
  std::vector<Device> out;
  for (auto* d : detail::local_device_impls()) out.emplace_back(d);
  return out;
}

int device_count() { return int(detail::global_device_impls().size()); }
int local_device_count() { return int(detail::local_device_impls().size()); }
int process_index() { return detail::job().process_index; }
int process_count() { return detail::job().process_count; }

}  // namespace tessel
