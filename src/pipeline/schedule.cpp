// Pipeline schedules and their simulation (include/tessel/pipeline.h, docs/pipeline.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "tessel/error.h"
#include "tessel/pipeline.h"
#include "tessel/pipeline_measure.h"

namespace tessel::pipeline {

namespace {
bool is_task_kind(TaskKind k) {
  return k == TaskKind::forward || k == TaskKind::backward || k == TaskKind::backward_input ||
         k == TaskKind::backward_weight;
}
}  // namespace

std::string Task::to_string() const {
  const std::string k = kind == TaskKind::forward          ? "F"
                        : kind == TaskKind::backward       ? "B"
                        : kind == TaskKind::backward_input ? "Bi"
                        : kind == TaskKind::backward_weight ? "Bw"
                                                            : "TaskKind(" + std::to_string(int(kind)) + ")";
  return k + "(s=" + std::to_string(stage) + ",m=" + std::to_string(microbatch) + ")";
}

std::string Plan::to_string() const {
  std::string r;
  for (size_t w = 0; w < tasks.size(); ++w) {
    r += "worker " + std::to_string(w) + ":";
    for (auto& t : tasks[w]) r += " " + t.to_string();
    r += "\n";
  }
  return r;
}

double theoretical_bubble(int num_stages, int num_microbatches) {
  return double(num_stages - 1) / double(num_microbatches + num_stages - 1);
}

namespace {

Task F(int s, int m) { return {TaskKind::forward, s, m}; }
Task B(int s, int m) { return {TaskKind::backward, s, m}; }

// One stage per worker: warm-up forwards, then one forward and one backward alternating,
// then the remaining backwards. `split` emits the backward as its input half, with the
// weight halves delayed by `weight_delay` microbatches (zero bubble).
std::vector<Task> one_f_one_b(int s, int S, int M, int warm, bool split) {
  std::vector<Task> out;
  const int delay = S - s - 1;
  int next_weight = 0;
  auto backward = [&](int m) {
    if (!split) return out.push_back(B(s, m));
    out.push_back({TaskKind::backward_input, s, m});
    if (m - next_weight >= delay) out.push_back({TaskKind::backward_weight, s, next_weight++});
  };
  for (int m = 0; m < warm; ++m) out.push_back(F(s, m));
  for (int i = 0; i < M - warm; ++i) {
    out.push_back(F(s, warm + i));
    backward(i);
  }
  for (int m = M - warm; m < M; ++m) {
    backward(m);
    if (split && next_weight < m) out.push_back({TaskKind::backward_weight, s, next_weight++});  // fill the cool-down
  }
  while (split && next_weight < M) out.push_back({TaskKind::backward_weight, s, next_weight++});
  return out;
}

// Megatron's interleaved 1F1B on worker w with V stages per worker: forwards walk the
// stages of groups of W microbatches chunk by chunk, backwards the same in reverse chunks.
std::vector<Task> interleaved(int w, int W, int V, int M) {
  const int total = M * V;
  auto task = [&](int k, bool forward) {
    int v = (k / W) % V;
    if (!forward) v = V - 1 - v;
    int m = (k / (W * V)) * W + k % W;
    return Task{forward ? TaskKind::forward : TaskKind::backward, v * W + w, m};
  };
  const int warm = std::min((W - w - 1) * 2 + (V - 1) * W, total);
  std::vector<Task> out;
  for (int k = 0; k < warm; ++k) out.push_back(task(k, true));
  for (int i = 0; i < total - warm; ++i) {
    out.push_back(task(warm + i, true));
    out.push_back(task(i, false));
  }
  for (int k = total - warm; k < total; ++k) out.push_back(task(k, false));
  return out;
}

std::string schedule_name(const Schedule& s) {
  static const char* names[] = {"GPipe", "OneF1B", "Eager1F1B", "Interleaved1F1B", "ZeroBubbleH1"};
  return names[s.index()];
}

}  // namespace

Plan make_plan(const Schedule& schedule, int W, int S, int M) {
  const std::string name = schedule_name(schedule);
  if (W < 1 || S < 1 || M < 1)
    throw ValueError(name + ": workers (" + std::to_string(W) + "), stages (" + std::to_string(S) +
                     ") and microbatches (" + std::to_string(M) + ") must be positive");
  int V = 1;
  if (auto* i = std::get_if<Interleaved1F1B>(&schedule)) {
    V = i->stages_per_worker;
    if (V < 1) throw ValueError(name + ": stages_per_worker is " + std::to_string(V) + "; use 1 or more");
    if (M % W != 0)
      throw ValueError(name + ": " + std::to_string(M) + " microbatches do not divide among " + std::to_string(W) +
                       " workers; interleaving needs a multiple of the worker count");
  }
  if (S != W * V)
    throw ValueError(name + ": " + std::to_string(S) + " stages (stage markers + 1) on " + std::to_string(W) +
                     " workers; this schedule runs " + std::to_string(V) + " stage(s) per worker, so it needs " +
                     std::to_string(W * V) + " stages" +
                     (V == 1 && S % W == 0 ? " (for " + std::to_string(S / W) +
                                                 " per worker use Interleaved1F1B{.stages_per_worker = " +
                                                 std::to_string(S / W) + "})"
                                           : ""));
  Plan p;
  p.num_workers = W, p.num_stages = S, p.num_microbatches = M;
  for (int s = 0; s < S; ++s) p.stage_worker.push_back(s % W);
  p.tasks.resize(size_t(W));
  for (int w = 0; w < W; ++w) {
    auto& out = p.tasks[size_t(w)];
    std::visit(
        [&](const auto& sched) {
          using T = std::decay_t<decltype(sched)>;
          if constexpr (std::is_same_v<T, GPipe>) {
            for (int m = 0; m < M; ++m) out.push_back(F(w, m));
            for (int m = 0; m < M; ++m) out.push_back(B(w, m));
          } else if constexpr (std::is_same_v<T, OneF1B>) {
            out = one_f_one_b(w, S, M, std::min(S - w - 1, M), false);
          } else if constexpr (std::is_same_v<T, Eager1F1B>) {
            out = one_f_one_b(w, S, M, std::min(S - w, M), false);
          } else if constexpr (std::is_same_v<T, ZeroBubbleH1>) {
            out = one_f_one_b(w, S, M, std::min(S - w - 1, M), true);
          } else {
            out = interleaved(w, W, V, M);
          }
        },
        schedule);
  }
  return p;
}

namespace {

double duration(TaskKind k) { return k == TaskKind::backward ? 2.0 : 1.0; }

using Key = std::tuple<int, int, int>;  // kind, stage, microbatch
Key key(const Task& t) { return {int(t.kind), t.stage, t.microbatch}; }

// The tasks `t` needs done first.
std::vector<Task> dependencies(const Task& t, int S, bool split) {
  const TaskKind back = split ? TaskKind::backward_input : TaskKind::backward;
  switch (t.kind) {
    case TaskKind::forward:
      if (t.stage > 0) return {F(t.stage - 1, t.microbatch)};
      return {};
    case TaskKind::backward:
    case TaskKind::backward_input: {
      std::vector<Task> d{F(t.stage, t.microbatch)};
      if (t.stage + 1 < S) d.push_back({back, t.stage + 1, t.microbatch});
      return d;
    }
    case TaskKind::backward_weight: return {{TaskKind::backward_input, t.stage, t.microbatch}};
  }
  return {};
}

}  // namespace

Simulation simulate(const Plan& p) { return simulate(p, [](const Task& t) { return duration(t.kind); }); }

Simulation simulate(const Plan& p, const std::function<double(const Task&)>& task_duration) {
  const int W = p.num_workers, S = p.num_stages, M = p.num_microbatches;
  if (int(p.tasks.size()) != W || int(p.stage_worker.size()) != S)
    throw ValueError("simulate: the plan lists " + std::to_string(p.tasks.size()) + " workers and " +
                     std::to_string(p.stage_worker.size()) + " stage placements for " + std::to_string(W) +
                     " workers and " + std::to_string(S) + " stages");
  bool split = false;
  for (auto& list : p.tasks)
    for (auto& t : list) split |= t.kind == TaskKind::backward_input || t.kind == TaskKind::backward_weight;
  // Every task exactly once, on its stage's worker.
  std::map<Key, int> seen;
  for (int w = 0; w < W; ++w)
    for (auto& t : p.tasks[size_t(w)]) {
      if (!is_task_kind(t.kind))
        throw ValueError("simulate: worker " + std::to_string(w) + " runs " + t.to_string() +
                         ", whose kind is not a TaskKind (an integer cast to TaskKind?); use TaskKind::forward, "
                         "backward, backward_input or backward_weight");
      if (t.stage < 0 || t.stage >= S || t.microbatch < 0 || t.microbatch >= M)
        throw ValueError("simulate: worker " + std::to_string(w) + " runs " + t.to_string() + ", outside " +
                         std::to_string(S) + " stages and " + std::to_string(M) + " microbatches");
      if (p.stage_worker[size_t(t.stage)] != w)
        throw ValueError("simulate: worker " + std::to_string(w) + " runs " + t.to_string() + ", but stage " +
                         std::to_string(t.stage) + " is placed on worker " + std::to_string(p.stage_worker[size_t(t.stage)]));
      if (++seen[key(t)] > 1) throw ValueError("simulate: " + t.to_string() + " is scheduled twice");
    }
  std::vector<TaskKind> kinds = split ? std::vector<TaskKind>{TaskKind::forward, TaskKind::backward_input,
                                                               TaskKind::backward_weight}
                                      : std::vector<TaskKind>{TaskKind::forward, TaskKind::backward};
  for (TaskKind k : kinds)
    for (int s = 0; s < S; ++s)
      for (int m = 0; m < M; ++m)
        if (!seen.count(key({k, s, m})))
          throw ValueError("simulate: " + Task{k, s, m}.to_string() + " is never scheduled (worker " +
                           std::to_string(p.stage_worker[size_t(s)]) + ")");
  if (seen.size() != kinds.size() * size_t(S) * size_t(M))
    throw ValueError("simulate: the plan mixes whole backwards with split ones; split every backward or none");

  // Each worker runs its list in order; a task starts when its worker is free and its
  // dependencies are done. Relax until no worker can move.
  std::map<Key, double> done;
  std::vector<size_t> next(size_t(W), 0);
  std::vector<double> free_at(size_t(W), 0), busy(size_t(W), 0);
  // Per stage: (time, +1 activations held / -1 freed).
  std::vector<std::vector<std::pair<double, int>>> stage_events(static_cast<size_t>(S));
  size_t remaining = seen.size();
  while (remaining > 0) {
    bool moved = false;
    for (int w = 0; w < W; ++w) {
      while (next[size_t(w)] < p.tasks[size_t(w)].size()) {
        const Task& t = p.tasks[size_t(w)][next[size_t(w)]];
        double start = free_at[size_t(w)];
        bool ready = true;
        for (const Task& d : dependencies(t, S, split)) {
          auto it = done.find(key(d));
          if (it == done.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) break;
        const double took = task_duration(t);
        if (!(took >= 0) || !std::isfinite(took))
          throw ValueError("simulate: the duration of " + t.to_string() + " is " + std::to_string(took) +
                           "; give every task a finite duration >= 0");
        const double end = start + took;
        done[key(t)] = end;
        free_at[size_t(w)] = end;
        busy[size_t(w)] += took;
        if (t.kind == TaskKind::forward) stage_events[size_t(t.stage)].push_back({end, +1});
        else if (t.kind != TaskKind::backward_weight) stage_events[size_t(t.stage)].push_back({end, -1});
        ++next[size_t(w)];
        --remaining;
        moved = true;
      }
    }
    if (!moved) {
      std::string why;
      for (int w = 0; w < W; ++w) {
        if (next[size_t(w)] >= p.tasks[size_t(w)].size()) continue;
        const Task& t = p.tasks[size_t(w)][next[size_t(w)]];
        for (const Task& d : dependencies(t, S, split))
          if (!done.count(key(d))) {
            why += "; worker " + std::to_string(w) + " waits at " + t.to_string() + " for " + d.to_string();
            break;
          }
      }
      throw ValueError("simulate: the schedule deadlocks (each worker runs its tasks in order)" + why);
    }
  }
  Simulation r;
  for (double t : free_at) r.makespan = std::max(r.makespan, t);
  double idle = 0;
  for (int w = 0; w < W; ++w) {
    r.idle_fraction.push_back(r.makespan > 0 ? 1.0 - busy[size_t(w)] / r.makespan : 0.0);
    idle += r.makespan - busy[size_t(w)];
  }
  r.bubble_fraction = r.makespan > 0 ? idle / (W * r.makespan) : 0.0;
  for (auto& ev : stage_events) {
    std::sort(ev.begin(), ev.end());  // at equal times a backward's free comes first
    int held = 0, peak = 0;
    for (auto& [t, d] : ev) peak = std::max(peak, held += d);
    r.peak_in_flight.push_back(peak);
  }
  return r;
}

}  // namespace tessel::pipeline
