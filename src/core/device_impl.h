#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "core/stream.h"
#include "tessel/device.h"
#include "tessel/sharding.h"

namespace tessel::detail {

/// A CPU device: its identity and, for a device of this process, its stream. Devices of
/// other processes (multi-process jobs) are descriptions only.
class DeviceImpl {
 public:
  DeviceImpl(int id, int process_index, int local_index, bool local = true)
      : id_(id), process_index_(process_index), local_index_(local_index),
        stream_(local ? std::make_unique<Stream>(id) : nullptr) {}
  int id() const { return id_; }
  int process_index() const { return process_index_; }
  int local_index() const { return local_index_; }
  bool is_local() const { return stream_ != nullptr; }
  /// The device's stream (or the calling thread's private one for it, see PrivateStreams);
  /// an internal error for a device of another process.
  Stream& stream();
  /// The device's own stream, whatever the calling thread installed (a local device only).
  Stream& own_stream() { return *stream_; }
  /// Renumbers a local device when the process joins a job (distributed::initialize).
  void set_identity(int id, int process_index) { id_ = id, process_index_ = process_index; }
  /// The SingleDeviceSharding of this device, made once (every value on one device shares it).
  const Sharding& sharding();

 private:
  int id_, process_index_, local_index_;
  std::unique_ptr<Stream> stream_;
  std::once_flag sharding_once_;
  Sharding sharding_;
};

/// Runs `task` on `dev`'s stream: inline on the caller's thread when it reads and writes at
/// most TESSEL_EAGER_INLINE_BYTES (`work_bytes`) and the stream is idle, else queued.
void run_on_stream(DeviceImpl* dev, size_t work_bytes, Stream::Task task);
/// Runs `fn(ctx)` on the caller's thread if it reads and writes at most TESSEL_EAGER_INLINE_BYTES and
/// `dev`'s stream is idle (true); else runs nothing (false: the caller uses run_on_stream).
bool run_inline_if_idle(DeviceImpl* dev, size_t work_bytes, void (*fn)(void*), void* ctx);

/// Streams of one thread's own, one per device, that replace the devices' streams for the
/// work that thread issues while they are installed (ScopedPrivateStreams). Colocated host
/// code runs its tessel operations on them: device work that waits for a colocated call's
/// outputs then never stands in front of the work that call itself issues.
class PrivateStreams {
 public:
  PrivateStreams() = default;
  ~PrivateStreams();  // waits for their work
  PrivateStreams(const PrivateStreams&) = delete;
  PrivateStreams& operator=(const PrivateStreams&) = delete;
  Stream& get(DeviceImpl* device);
  /// Waits until every task enqueued on them so far has run.
  void synchronize();
  /// True when none of them has a task queued or running (see Stream::idle).
  bool idle();

 private:
  std::mutex mu_;
  std::vector<std::pair<DeviceImpl*, std::unique_ptr<Stream>>> streams_;
};
/// Installs `streams` for the calling thread until destroyed.
class ScopedPrivateStreams {
 public:
  explicit ScopedPrivateStreams(PrivateStreams* streams);
  ~ScopedPrivateStreams();

 private:
  PrivateStreams* previous_;
};

/// The devices of this process, made on first use from TESSEL_CPU_DEVICES (default 1).
/// Making them registers exit's teardown (core/lifetime.h), which waits for their work.
std::vector<DeviceImpl*>& local_device_impls();
/// Every device of the job in global id order: the local ones alone, or, once this
/// process joined a multi-process job, every process's devices in process order.
const std::vector<DeviceImpl*>& global_device_impls();
DeviceImpl* default_device();

/// The job this process belongs to (set once by distributed::initialize): its index, the
/// number of processes and each process's device count. Renumbers the local devices and
/// describes the others.
void join_job(int process_index, const std::vector<int>& devices_per_process);

}  // namespace tessel::detail
