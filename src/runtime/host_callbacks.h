#pragma once
// The host-callback runtime (docs/host_callbacks.md): one receiver thread per local device
// runs the device's asynchronous callbacks (id_tap, id_print, debug::print/callback) in the
// order the device issued them, from a queue bounded in bytes
// (TESSEL_HOST_CALLBACK_MAX_QUEUE_BYTES, default 256 MiB) that makes a device wait when
// full. Exceptions thrown by those callbacks are recorded, never propagated to the device;
// barrier_wait reports the last one. Pending callbacks run before the process exits.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace tessel::detail {
class DeviceImpl;
}

namespace tessel::detail::host {

/// Queues `fn` for `device`'s receiver thread (started on first use). Blocks while the
/// device's queue holds more than the byte bound — unless the receiver's current callback
/// is itself waiting on tessel work, which may be this very device's. An exception `fn`
/// throws is recorded under `name` for barrier_wait.
void push(DeviceImpl* device, size_t bytes, std::string name, std::function<void()> fn);

/// Runs `fn` on the calling thread (a device's stream, for `call`) after every callback
/// the device queued before it has run, so that one device's callbacks keep their order —
/// unless the receiver's running callback waits on tessel work (perhaps on this device,
/// which is busy with the call): then `fn` runs at once rather than deadlock. The tessel
/// work `fn` issues runs on streams of the device's callbacks (PrivateStreams), not on the
/// devices' own: those may be waiting for this device in the middle of a launch.
void run_in_order(DeviceImpl* device, const std::function<void()>& fn);

/// Records a callback's failure for the next barrier_wait: what a synchronous callback
/// without results does (it has no result whose read could report it).
void record_failure(const std::string& name, const std::string& what);

/// Waits until every device stream of this process has run the work enqueued so far and
/// every callback it issued has run; then, if a callback threw since the last barrier,
/// throws ts::host::CallbackException carrying the last exception's message.
void barrier_wait(const std::string& logging_name);

/// The byte bound of each device's queue (TESSEL_HOST_CALLBACK_MAX_QUEUE_BYTES).
size_t max_queue_bytes();
/// How long an idle receiver polls its queue before it sleeps (TESSEL_HOST_CALLBACK_SPIN_US;
/// 0 when the process may use one core only).
std::chrono::microseconds receiver_spin();

}  // namespace tessel::detail::host
