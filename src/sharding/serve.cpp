// The worker's side of single-controller jobs for arrays and programs: keeping the pieces
// the driver sends ("array.put") and running the programs it launches ("program.run").
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "sharding/placement.h"
#include "sharding/spmd.h"

namespace tessel::detail {

[[maybe_unused]] const bool handlers_registered = [] {
  namespace ctl = distributed::controller;
  ctl::register_handler("array.put", [](ir::Reader& r, ctl::Reply) {
    const uint64_t id = r.u64();
    try {
      Sharding s = ir::read_sharding(r);
      Array x = ir::read_array(r);
      ctl::store(id, split_array(x, s));
    } catch (...) {
      ctl::store_error(id, std::current_exception());
    }
  });
  ctl::register_handler("program.run", [](ir::Reader& r, ctl::Reply) {
    const uint64_t key = r.u64();
    std::string bytes = r.str();
    std::vector<uint64_t> in_ids(r.count(8)), out_ids;
    for (auto& id : in_ids) id = r.u64();
    out_ids.resize(r.count(8));
    for (auto& id : out_ids) id = r.u64();
    try {
      // The programs the driver sent are kept under their keys until it forgets them (its
      // program died: src/sharding/spmd.cpp, ship_launch).
      if (!bytes.empty()) ctl::keep(key, std::make_shared<const ir::Program>(ir::deserialize(bytes)));
      ir::ProgramRef program = ctl::kept_as<ir::Program>(key);
      if (!program) throw Error("internal: worker has no program with key " + std::to_string(key));
      std::vector<Array> args;
      for (auto id : in_ids) args.push_back(ctl::lookup(id, program->name));
      std::vector<Array> outs = spmd_run_program(program, args);
      if (outs.size() != out_ids.size()) throw Error("internal: '" + program->name + "' gave an unexpected result count");
      for (size_t j = 0; j < outs.size(); ++j) ctl::store(out_ids[j], outs[j]);
    } catch (...) {
      for (auto id : out_ids) ctl::store_error(id, std::current_exception());
    }
  });
  return true;
}();

// Every process of a job runs the launches of a mesh that spans processes in the same order
// (multi-controller): each queues the parts of its own devices, and their collectives meet

}  // namespace tessel::detail
