// Colocated objects (ObjectState: made on first use here, freed on the workers that used
// them) and sites (a colocated callable with its specialization and its out-spec cache).
#include <algorithm>
#include <memory>
#include <mutex>

#include "colocated/colocated_impl.h"
#include "core/log.h"
#include "distributed/controller.h"
#include "ir/serialize.h"

namespace tessel::colocated::detail {

namespace ctl = distributed::controller;

// ---- objects ----

ObjectState::ObjectState(std::string class_display, std::string class_registered,
                         std::function<std::shared_ptr<void>()> make, std::function<std::string()> encode_ctor)
    : display_(std::move(class_display)), registered_(std::move(class_registered)), make_(std::move(make)),
      encode_ctor_(std::move(encode_ctor)), id_(ctl::is_driver() ? ctl::new_id() : 0) {}

ObjectState::~ObjectState() {
  std::vector<int> procs;
  {
    std::lock_guard lock(mu_);
    procs = remote_;
  }
  if (procs.empty()) return;
  ir::Writer w;
  w.u64(id_);
  try {
    ctl::post(procs, "colocated.delete_object", w.bytes());
  } catch (const std::exception& e) {  // a worker that is gone holds nothing any more
    TESSEL_DEBUG_LOG(std::string("colocated: freeing ") + display_ + ": " + e.what());
  }
}

void* ObjectState::local_instance() {
  std::call_once(made_, [&] {
    try {
      instance_ = make_();
    } catch (...) {
      error_ = std::current_exception();
    }
  });
  if (error_) std::rethrow_exception(error_);
  return instance_.get();
}

void ObjectState::used_on(int p) {
  std::lock_guard lock(mu_);
  if (std::find(remote_.begin(), remote_.end(), p) == remote_.end()) remote_.push_back(p);
}

// ---- sites ----

Site::Site() : known(std::make_unique<OutSpecCache>()) {}
Site::~Site() = default;

std::shared_ptr<Site> Site::specialized(const Specialization& more) const {
  auto twice = [&](const char* field) {
    throw ValueError(target.display + ": specialize: " + field +
                     " was specialized already; each of in_specs, out_specs_fn and devices may be given once");
  };
  auto s = std::make_shared<Site>();
  s->target = target;
  s->spec = spec;
  if (more.in_specs) {
    if (spec.in_specs) twice("in_specs");
    s->spec.in_specs = more.in_specs;
  }
  if (more.out_specs_fn) {
    if (spec.out_specs_fn) twice("out_specs_fn");
    s->spec.out_specs_fn = more.out_specs_fn;
  }
  if (more.devices) {
    if (spec.devices) twice("devices");
    if (more.devices->empty()) throw ValueError(target.display + ": specialize: devices is empty; list the devices to run on");
    s->spec.devices = more.devices;
  }
  return s;
}

}  // namespace tessel::colocated::detail
