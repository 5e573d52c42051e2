// Instruction streams (see instructions.h).
#include "pipeline/instructions.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ir/serialize.h"
#include "tessel/error.h"

namespace tessel::pipeline::detail {
namespace {

std::string slots(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " %" : "%") + std::to_string(s[i]);
  return r + "]";
}

// Slot numbering: value v of microbatch m is v * M + m (values that do not change between
// microbatches use m = 0); the accumulator of step output o follows all of them.
struct Slots {
  int64_t M, V;
  int64_t of(int v, int m) const { return v * M + m; }
  int64_t accumulator(int o) const { return V * M + o; }
  bool is_value(int64_t s) const { return s < V * M; }
  int value(int64_t s) const { return int(s / M); }
  int microbatch(int64_t s) const { return int(s % M); }
};

Instruction make(Op op, std::vector<int64_t> ins, std::vector<int64_t> outs) {
  Instruction i;
  i.op = op;
  i.ins = std::move(ins);
  i.outs = std::move(outs);
  return i;
}
Instruction transfer(Op op, int64_t s, int peer, int tag) {
  Instruction i = op == Op::send ? make(op, {s}, {}) : make(op, {}, {s});
  i.peer = peer;
  i.tag = tag;
  return i;
}

}  // namespace

std::string Instruction::to_string() const {
  switch (op) {
    case Op::rename_in: return "rename in" + std::to_string(ext) + " -> " + slots(outs) + (donated ? " (donated)" : "");
    case Op::recv: return "recv " + slots(outs) + " <- w" + std::to_string(peer) + " #" + std::to_string(tag) + " " +
                          aval.to_string();
    case Op::run:
      return "run " + (task.microbatch < 0 ? std::string("epilogue") : segment_name(task.kind, task.stage) + "(m=" + std::to_string(task.microbatch) + ")") + " " +
             slots(ins) + " -> " + slots(outs);
    case Op::send: return "send " + slots(ins) + " -> w" + std::to_string(peer) + " #" + std::to_string(tag);
    case Op::accumulate: {
      const char* m = mode == AccumulateMode::keep    ? "keep"
                      : mode == AccumulateMode::first ? "first"
                      : mode == AccumulateMode::add   ? "add"
                                                      : "add/";
      return std::string("accumulate ") + m + (mode == AccumulateMode::add_and_scale ? std::to_string(count) : "") + " " +
             slots(ins) + " -> " + slots(outs);
    }
    case Op::rename_out: return "rename " + slots(ins) + " -> out" + std::to_string(ext);
    case Op::del: return "del " + slots(ins);
    case Op::wait: return "wait " + slots(outs);
    case Op::all_reduce: {
      std::string g;
      for (int w : group) g += (g.empty() ? "w" : ",w") + std::to_string(w);
      return "all_reduce " + slots(ins) + " -> " + slots(outs) + " " + g +
             (across_replicas ? " x" + std::to_string(count) + " replicas (mean)" : "") + " #" + std::to_string(tag) +
             " " + aval.to_string();
    }
    case Op::all_reduce_start: {
      Instruction blocking = *this;
      blocking.op = Op::all_reduce;
      return "all_reduce_start" + blocking.to_string().substr(std::string("all_reduce").size());
    }
    case Op::all_reduce_wait: return "all_reduce_wait #" + std::to_string(tag) + " -> " + slots(outs);
  }
  return "?";
}

std::string Streams::to_string() const {
  std::ostringstream os;
  for (size_t w = 0; w < per_worker.size(); ++w) {
    os << "worker " << w << ":\n";
    for (const auto& in : per_worker[w]) os << "  " << in.to_string() << "\n";
  }
  return os.str();
}

Streams make_streams(const StagedProgram& staged, const Plan& plan, const std::vector<bool>& donated,
                     int recv_lookahead, int replicas, bool overlap_reductions) {
  const int W = plan.num_workers, M = plan.num_microbatches;
  const Slots slot{M, int64_t(staged.values.size())};
  Streams r;
  r.num_workers = W;
  r.num_microbatches = M;
  r.replicas = replicas;
  r.per_worker.resize(size_t(W));
  r.inputs.resize(size_t(W));
  auto worker_of_segment = [&](int seg) { return plan.stage_worker[size_t(staged.segments[size_t(seg)].stage)]; };

  // Which workers read each value (other than the one computing it).
  std::vector<std::set<int>> readers(staged.values.size());
  for (size_t seg = 0; seg < staged.segments.size(); ++seg)
    for (int v : staged.segments[seg].inputs) readers[size_t(v)].insert(worker_of_segment(int(seg)));
  std::map<std::tuple<int, int, int>, int> tags;  // (value, microbatch, receiver) -> transfer; (-1-sum, -1, -1)
  // The parts of the cross-stage sums: each averaged into an accumulator of its own (after
  // the step outputs'), per value the (sum, part) pairs it feeds.
  std::map<int, std::vector<std::pair<size_t, size_t>>> parts_of;
  std::vector<std::vector<int64_t>> part_accumulator(staged.sums.size());
  int64_t next_accumulator = int64_t(staged.outputs.size());
  for (size_t k = 0; k < staged.sums.size(); ++k)
    for (size_t j = 0; j < staged.sums[k].parts.size(); ++j) {
      parts_of[staged.sums[k].parts[j]].push_back({k, j});
      part_accumulator[k].push_back(slot.accumulator(int(next_accumulator++)));
    }
  const int epilogue_worker = staged.epilogue < 0 ? -1 : worker_of_segment(staged.epilogue);
  auto tag_of = [&](int v, int m, int to) { return tags.try_emplace({v, m, to}, int(tags.size())).first->second; };

  // Step outputs: the worker computing each, and how many results each worker returns.
  std::vector<int> results(size_t(W), 0);
  for (size_t o = 0; o < staged.outputs.size(); ++o) {
    const Value& v = staged.values[size_t(staged.outputs[o])];
    const int w = v.producer < 0 ? -1 : worker_of_segment(v.producer);
    r.output_worker.push_back(w);
    r.output_ext.push_back(w < 0 ? -1 : results[size_t(w)]++);
  }

  for (int w = 0; w < W; ++w) {
    auto& out = r.per_worker[size_t(w)];
    // The step inputs this worker's segments read.
    for (size_t v = 0; v < staged.values.size(); ++v) {
      const Value& val = staged.values[v];
      if (val.step_input < 0 || !readers[v].count(w)) continue;
      for (int m = 0; m < (val.per_microbatch ? M : 1); ++m) {
        Instruction in = make(Op::rename_in, {}, {slot.of(int(v), m)});
        in.ext = int(r.inputs[size_t(w)].size());
        in.donated = size_t(val.step_input) < donated.size() && donated[size_t(val.step_input)];
        r.inputs[size_t(w)].push_back({val.step_input, val.per_microbatch ? m : -1});
        out.push_back(in);
      }
    }
    // Per task: the receives it needs (posted `recv_lookahead` tasks early) and its body
    // (waits, run, sends, accumulations).
    std::set<int64_t> received;
    std::vector<int> accumulated(staged.outputs.size(), 0);
    std::map<int64_t, int> part_accumulated;  // accumulator -> microbatches added
    std::vector<std::vector<Instruction>> posts, bodies;
    std::vector<Instruction> reduction_waits;  // of the overlapped replica reductions, after the last task
    for (const Task& t : plan.tasks[size_t(w)]) {
      const int seg = staged.segment(t.kind, t.stage);
      const Segment& sg = staged.segments[size_t(seg)];
      if (sg.empty()) continue;
      auto& post = posts.emplace_back();
      auto& body = bodies.emplace_back();
      const int m = t.microbatch;
      auto slot_in = [&](int v) { return slot.of(v, staged.values[size_t(v)].per_microbatch ? m : 0); };
      for (int v : sg.inputs) {
        const Value& val = staged.values[size_t(v)];
        if (val.producer < 0) continue;
        const int from = worker_of_segment(val.producer);
        if (from == w || !received.insert(slot_in(v)).second) continue;
        post.push_back(transfer(Op::recv, slot_in(v), from, tag_of(v, m, w)));
        post.back().aval = val.aval;
        body.push_back(make(Op::wait, {}, {slot_in(v)}));
      }
      Instruction run = make(Op::run, {}, {});
      run.segment = seg;
      run.task = t;
      for (int v : sg.inputs) run.ins.push_back(slot_in(v));
      for (int v : sg.outputs) run.outs.push_back(slot.of(v, m));
      body.push_back(run);
      for (int v : sg.outputs) {
        for (int to : readers[size_t(v)])
          if (to != w) body.push_back(transfer(Op::send, slot.of(v, m), to, tag_of(v, m, to)));
        for (size_t o = 0; o < staged.outputs.size(); ++o) {
          if (staged.outputs[o] != v) continue;
          const int k = accumulated[o]++;
          Instruction acc = make(Op::accumulate, {slot.of(v, m)}, {slot.accumulator(int(o))});
          acc.mode = !staged.output_per_microbatch[o] ? AccumulateMode::keep
                     : k == 0                         ? AccumulateMode::first
                     : k + 1 < M                      ? AccumulateMode::add
                                                      : AccumulateMode::add_and_scale;
          acc.count = M;
          if (k > 0 && acc.mode != AccumulateMode::keep) acc.ins.push_back(slot.accumulator(int(o)));
          body.push_back(acc);
          if (replicas > 1 && acc.mode == (M == 1 ? AccumulateMode::first : AccumulateMode::add_and_scale)) {
            // The replicas' means averaged: the mean over every microbatch of the step.
            Instruction all = make(Op::all_reduce, {slot.accumulator(int(o))}, {slot.accumulator(int(o))});
            all.group = {w};
            all.across_replicas = true;
            all.count = replicas;
            all.tag = tag_of(-1 - int(staged.sums.size() + o), -1, -1);
            all.aval = staged.values[size_t(v)].aval;
            if (overlap_reductions) {
              all.op = Op::all_reduce_start;
              all.outs.clear();
              Instruction wait = make(Op::all_reduce_wait, {}, {slot.accumulator(int(o))});
              wait.tag = all.tag;
              reduction_waits.push_back(wait);
            }
            body.push_back(all);
          }
        }
        if (auto it = parts_of.find(v); it != parts_of.end())
          for (auto [k, j] : it->second) {
            const int64_t into = part_accumulator[k][j];
            const int n = part_accumulated[into]++;
            Instruction acc = make(Op::accumulate, {slot.of(v, m)}, {into});
            acc.mode = !staged.sums[k].part_depends_on_batch[j] ? AccumulateMode::keep
                       : n == 0                                 ? AccumulateMode::first
                       : n + 1 < M                              ? AccumulateMode::add
                                                                : AccumulateMode::add_and_scale;
            acc.count = M;
            if (n > 0 && acc.mode != AccumulateMode::keep) acc.ins.push_back(into);
            body.push_back(acc);
          }
      }
    }
    // Task k's receives are posted before task k - lookahead runs.
    const size_t ahead = size_t(std::max(0, recv_lookahead));
    for (size_t k = 0; k < bodies.size(); ++k) {
      for (size_t j = k == 0 ? 0 : k + ahead; j <= k + ahead && j < posts.size(); ++j)
        out.insert(out.end(), posts[j].begin(), posts[j].end());
      out.insert(out.end(), bodies[k].begin(), bodies[k].end());
    }
    out.insert(out.end(), reduction_waits.begin(), reduction_waits.end());
    // The cross-stage sums, in one order on every worker: each worker's parts added, then
    // summed among the workers that computed parts and the epilogue's.
    for (size_t k = 0; k < staged.sums.size(); ++k) {
      const CrossStageSum& sum = staged.sums[k];
      std::set<int> group{epilogue_worker};
      std::vector<int64_t> mine;
      for (size_t j = 0; j < sum.parts.size(); ++j) {
        const int from = worker_of_segment(staged.values[size_t(sum.parts[j])].producer);
        group.insert(from);
        if (from == w) mine.push_back(part_accumulator[k][j]);
      }
      if (!group.count(w)) continue;
      for (size_t j = 1; j < mine.size(); ++j) {
        Instruction add = make(Op::accumulate, {mine[j], mine[0]}, {mine[0]});
        add.mode = AccumulateMode::add;
        out.push_back(add);
      }
      Instruction all = make(Op::all_reduce, mine.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{mine[0]},
                             {slot.of(sum.result, 0)});
      all.group.assign(group.begin(), group.end());
      all.across_replicas = replicas > 1;
      all.count = replicas;
      all.tag = tag_of(-1 - int(k), -1, -1);
      all.aval = staged.values[size_t(sum.result)].aval;
      out.push_back(all);
    }
    if (w == epilogue_worker) {
      const Segment& sg = staged.segments[size_t(staged.epilogue)];
      if (!sg.empty()) {
        Instruction run = make(Op::run, {}, {});
        run.segment = staged.epilogue;
        run.task = Task{TaskKind::backward, sg.stage, -1};
        for (int v : sg.inputs) run.ins.push_back(slot.of(v, 0));
        for (int v : sg.outputs) run.outs.push_back(slot.of(v, 0));
        out.push_back(run);
      }
      for (size_t o = 0; o < staged.outputs.size(); ++o)
        if (staged.values[size_t(staged.outputs[o])].producer == staged.epilogue) {
          Instruction keep = make(Op::accumulate, {slot.of(staged.outputs[o], 0)}, {slot.accumulator(int(o))});
          keep.mode = AccumulateMode::keep;
          out.push_back(keep);
        }
    }
    for (size_t o = 0; o < staged.outputs.size(); ++o)
      if (r.output_worker[o] == w) {
        out.push_back(make(Op::rename_out, {slot.accumulator(int(o))}, {}));
        out.back().ext = r.output_ext[o];
      }
    // Free every slot after its last use.
    std::map<int64_t, size_t> last;
    for (size_t i = 0; i < out.size(); ++i) {
      for (int64_t s : out[i].ins) last[s] = i;
      for (int64_t s : out[i].outs) last[s] = i;
    }
    std::vector<std::vector<int64_t>> frees(out.size());
    for (auto [s, i] : last) frees[i].push_back(s);
    std::vector<Instruction> with_frees;
    for (size_t i = 0; i < out.size(); ++i) {
      with_frees.push_back(out[i]);
      for (int64_t s : frees[i]) with_frees.push_back(make(Op::del, {s}, {}));
    }
    out = std::move(with_frees);
  }
  r.num_transfers = int(tags.size());
  return r;
}

void check_streams(const Streams& streams, const StagedProgram& staged) {
  struct End {
    int worker;
    size_t index;
    Aval aval;
  };
  std::map<std::tuple<int, int, int>, std::vector<End>> sends, recvs;  // (tag, from, to)
  std::map<int, std::map<int, std::vector<int>>> reductions;           // tag -> worker -> group
  for (int w = 0; w < streams.num_workers; ++w) {
    const auto& stream = streams.per_worker[size_t(w)];
    std::map<int64_t, Aval> live, posted;  // posted: receives not yet waited for
    std::set<int64_t> freed;
    std::set<int> started;  // all_reduce_start tags not yet waited for
    auto fail = [&](size_t i, const std::string& why) {
      throw Error("pipeline: instruction " + std::to_string(i) + " of worker " + std::to_string(w) + " (" +
                  stream[i].to_string() + ") " + why);
    };
    for (size_t i = 0; i < stream.size(); ++i) {
      const Instruction& in = stream[i];
      for (int64_t s : in.ins) {
        if (posted.count(s)) fail(i, "reads slot %" + std::to_string(s) + " before its receive is waited for");
        if (freed.count(s)) fail(i, "reads slot %" + std::to_string(s) + " after it was freed");
        if (!live.count(s)) fail(i, "reads slot %" + std::to_string(s) + " before it is written");
      }
      if (in.op == Op::wait) {
        auto it = posted.find(in.outs[0]);
        if (it == posted.end()) fail(i, "waits for slot %" + std::to_string(in.outs[0]) + ", which no receive was posted into");
        live[in.outs[0]] = it->second;
        posted.erase(it);
        continue;
      }
      if (in.op == Op::all_reduce || in.op == Op::all_reduce_start) {
        if (!std::count(in.group.begin(), in.group.end(), w)) fail(i, "is not among the workers of its group");
        if (reductions[in.tag].count(w)) fail(i, "repeats all_reduce #" + std::to_string(in.tag));
        reductions[in.tag][w] = in.group;
        if (in.op == Op::all_reduce_start) started.insert(in.tag);
      }
      if (in.op == Op::all_reduce_wait && !started.erase(in.tag))
        fail(i, "waits for all_reduce #" + std::to_string(in.tag) + ", which was not started (or waited for already)");
      if (in.op == Op::recv) {
        if (live.count(in.outs[0]) || posted.count(in.outs[0]))
          fail(i, "posts a receive into slot %" + std::to_string(in.outs[0]) + ", which is in use");
        freed.erase(in.outs[0]);
        posted[in.outs[0]] = in.aval;
        recvs[{in.tag, in.peer, w}].push_back({w, i, in.aval});
        continue;
      }
      if (in.op == Op::del) {
        if (posted.count(in.ins[0])) fail(i, "frees slot %" + std::to_string(in.ins[0]) + " before its receive is waited for");
        live.erase(in.ins[0]);
        freed.insert(in.ins[0]);
        continue;
      }
      for (int64_t s : in.outs) {
        freed.erase(s);
        live[s] = Aval();
      }
      if (in.op == Op::run) {
        const Segment& sg = staged.segments[size_t(in.segment)];
        if (sg.inputs.size() != in.ins.size() || sg.outputs.size() != in.outs.size())
          fail(i, "does not match its segment's inputs and outputs");
      }
      if (in.op == Op::send) {
        const int v = int(in.ins[0] / streams.num_microbatches);
        sends[{in.tag, w, in.peer}].push_back({w, i, staged.values[size_t(v)].aval});
      }
    }
    if (!posted.empty())
      throw Error("pipeline: worker " + std::to_string(w) + " never waits for its receive into slot %" +
                  std::to_string(posted.begin()->first));
    if (!started.empty())
      throw Error("pipeline: worker " + std::to_string(w) + " never waits for its all_reduce #" +
                  std::to_string(*started.begin()));
    if (!live.empty())
      throw Error("pipeline: worker " + std::to_string(w) + " never frees slot %" + std::to_string(live.begin()->first));
  }
  for (const auto& [key, ends] : sends) {
    auto it = recvs.find(key);
    if (ends.size() != 1 || it == recvs.end() || it->second.size() != 1)
      throw Error("pipeline: send #" + std::to_string(std::get<0>(key)) + " from worker " + std::to_string(std::get<1>(key)) +
                  " to worker " + std::to_string(std::get<2>(key)) + " has " +
                  std::to_string(it == recvs.end() ? 0 : it->second.size()) + " matching receives (and " +
                  std::to_string(ends.size()) + " sends); each needs exactly one");
    if (!(it->second[0].aval == ends[0].aval))
      throw Error("pipeline: send #" + std::to_string(std::get<0>(key)) + " carries " + ends[0].aval.to_string() +
                  " but its receive expects " + it->second[0].aval.to_string());
  }
  for (const auto& [tag, members] : reductions) {
    const std::vector<int>& group = members.begin()->second;
    for (int w : group)
      if (!members.count(w) || members.at(w) != group)
        throw Error("pipeline: all_reduce #" + std::to_string(tag) + " among " + std::to_string(group.size()) +
                    " workers is missing on worker " + std::to_string(w) + " or names another group there");
    if (members.size() != group.size())
      throw Error("pipeline: all_reduce #" + std::to_string(tag) + " runs on a worker outside its group");
  }
  for (const auto& [key, ends] : recvs)
    if (!sends.count(key))
      throw Error("pipeline: receive #" + std::to_string(std::get<0>(key)) + " on worker " +
                  std::to_string(std::get<2>(key)) + " has no matching send from worker " + std::to_string(std::get<1>(key)));
}

std::vector<int> peak_live_microbatches(const Streams& streams, const StagedProgram& staged) {
  const Slots slot{streams.num_microbatches, int64_t(staged.values.size())};
  std::vector<int> peaks;
  for (const auto& stream : streams.per_worker) {
    std::map<int, int> held;  // microbatch -> computed slots held
    int peak = 0;
    for (const Instruction& in : stream) {
      auto counts = [&](int64_t s) {
        return slot.is_value(s) && staged.values[size_t(slot.value(s))].step_input < 0;
      };
      if (in.op == Op::del) {
        if (counts(in.ins[0]) && --held[slot.microbatch(in.ins[0])] == 0) held.erase(slot.microbatch(in.ins[0]));
        continue;
      }
      if (in.op == Op::run || in.op == Op::wait)
        for (int64_t s : in.outs)
          if (counts(s)) ++held[slot.microbatch(s)];
      peak = std::max(peak, int(held.size()));
    }
    peaks.push_back(peak);
  }
  return peaks;
}

}  // namespace tessel::pipeline::detail

namespace tessel::pipeline::detail {

void write_stream(ir::Writer& w, const std::vector<Instruction>& stream) {
  auto slots_out = [&](const std::vector<int64_t>& s) {
    w.count(s.size());
    for (int64_t x : s) w.i64(x);
  };
  w.count(stream.size());
  for (const Instruction& in : stream) {
    w.u8(uint8_t(in.op));
    slots_out(in.ins);
    slots_out(in.outs);
    w.i64(in.segment);
    w.u8(uint8_t(in.task.kind));
    w.i64(in.task.stage);
    w.i64(in.task.microbatch);
    w.i64(in.peer);
    w.i64(in.tag);
    ir::write_aval(w, in.aval);
    w.i64(in.ext);
    w.boolean(in.donated);
    w.u8(uint8_t(in.mode));
    w.i64(in.count);
    w.count(in.group.size());
    for (int g : in.group) w.i64(g);
    w.boolean(in.across_replicas);
  }
}

// A stream comes from the driver over MPI: whatever the bytes, a worker must not index past
// an instruction's slots or take an enum value it has no case for, so every field is checked
// against what its operation needs.
std::vector<Instruction> read_stream(ir::Reader& r) {
  auto small = [&](const char* field, int64_t lo) {  // an int field, in [lo, INT_MAX]
    const int64_t v = r.i64();
    if (v < lo || v > std::numeric_limits<int>::max())
      r.fail(std::string("pipeline instruction field '") + field + "' is " + std::to_string(v) + ", outside [" +
             std::to_string(lo) + ", " + std::to_string(std::numeric_limits<int>::max()) + "]");
    return int(v);
  };
  auto slots_in = [&] {
    std::vector<int64_t> s(r.count(8));
    for (auto& x : s)
      if ((x = r.i64()) < 0) r.fail("negative pipeline slot %" + std::to_string(x));
    return s;
  };
  std::vector<Instruction> stream(r.count(8));
  for (Instruction& in : stream) {
    const uint8_t op = r.u8();
    if (op > uint8_t(Op::all_reduce_wait)) r.fail("unknown pipeline instruction " + std::to_string(op));
    in.op = Op(op);
    in.ins = slots_in();
    in.outs = slots_in();
    in.segment = small("segment", -1);
    const uint8_t kind = r.u8();
    if (kind > uint8_t(TaskKind::backward_weight)) r.fail("unknown pipeline task kind " + std::to_string(kind));
    in.task.kind = TaskKind(kind);
    in.task.stage = small("stage", -1);
    in.task.microbatch = small("microbatch", -1);
    in.peer = small("peer", -1);
    in.tag = small("tag", 0);
    in.aval = ir::read_aval(r);
    in.ext = small("ext", -1);
    in.donated = r.boolean();
    const uint8_t mode = r.u8();
    if (mode > uint8_t(AccumulateMode::add_and_scale)) r.fail("unknown accumulate mode " + std::to_string(mode));
    in.mode = AccumulateMode(mode);
    in.count = small("count", 0);
    in.group.resize(r.count(8));
    for (int& g : in.group) g = small("group", 0);
    in.across_replicas = r.boolean();
    // The slots each operation reads and writes (run: its segment's, checked on loading).
    const bool adds = in.mode == AccumulateMode::add || in.mode == AccumulateMode::add_and_scale;
    const size_t want_ins = in.op == Op::send || in.op == Op::rename_out || in.op == Op::del ||
                                    in.op == Op::all_reduce_start
                                ? 1
                            : in.op == Op::accumulate                                    ? (adds ? 2 : 1)
                                                                                         : 0;
    const size_t want_outs = in.op == Op::rename_in || in.op == Op::recv || in.op == Op::wait ||
                                     in.op == Op::accumulate || in.op == Op::all_reduce || in.op == Op::all_reduce_wait
                                 ? 1
                                 : 0;
    const bool any_ins = in.op == Op::run || (in.op == Op::all_reduce && in.ins.size() <= 1);
    if (in.op != Op::run && ((!any_ins && in.ins.size() != want_ins) || in.outs.size() != want_outs))
      r.fail("pipeline instruction '" + in.to_string() + "' reads " + std::to_string(in.ins.size()) + " and writes " +
             std::to_string(in.outs.size()) + " slots; it needs " + std::to_string(want_ins) + " and " +
             std::to_string(want_outs));
    if ((in.op == Op::send || in.op == Op::recv) && in.peer < 0) r.fail("pipeline transfer without a peer worker");
    if ((in.op == Op::rename_in || in.op == Op::rename_out) && in.ext < 0) r.fail("pipeline rename without an index");
    if ((in.op == Op::all_reduce || in.op == Op::all_reduce_start) && in.group.empty()) r.fail("pipeline all_reduce without workers");
    if (in.op == Op::run && in.segment < 0) r.fail("pipeline run without a segment");
    if (in.op == Op::accumulate && in.mode == AccumulateMode::add_and_scale && in.count <= 0)
      r.fail("pipeline accumulate divides by " + std::to_string(in.count));
  }
  return stream;
}

}  // namespace tessel::pipeline::detail
