// Measured pipeline timelines: Chrome trace export and idle fractions
// (include/tessel/pipeline.h).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tessel/error.h"
#include "tessel/pipeline.h"
#include "tessel/pipeline_measure.h"

namespace tessel::pipeline {

namespace {

/// A JSON string literal; control characters become \u escapes so a name holding any byte
/// still gives a file that trace viewers load (non-ASCII UTF-8 passes through unchanged).
std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\r': r += "\\r"; break;
      case '\t': r += "\\t"; break;
      case '\b': r += "\\b"; break;
      case '\f': r += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          r += buf;
        } else {
          r += char(c);
        }
    }
  }
  return r + "\"";
}

/// Microseconds to nanosecond precision without trailing zeros ("150", "2.5"): relative
/// times are small, so this keeps the file short and exact enough for any viewer. JSON has
/// no NaN or infinity, so a broken time becomes 0 rather than an unreadable file.
std::string json_number(double us) {
  if (!std::isfinite(us)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  std::string r = buf;
  r.erase(r.find_last_not_of('0') + 1);
  if (r.back() == '.') r.pop_back();
  if (r == "-0") r = "0";
  return r;
}

/// Stage tasks are the work a pipeline exists to do; everything else (communication,
/// bookkeeping) counts as bubble.
bool is_stage_task(const std::string& kind) {
  return kind == "forward" || kind == "backward" || kind == "backward_input" || kind == "backward_weight";
}

/// Total length of the union of `intervals`, so that overlapping events (which a correct
/// timeline does not have) cannot push a worker's busy time past the span.
double union_length(std::vector<std::pair<double, double>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, cur_start = 0, cur_end = 0;
  bool open = false;
  for (auto [s, e] : intervals) {
    if (e <= s) continue;
    if (open && s <= cur_end) {
      cur_end = std::max(cur_end, e);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = s, cur_end = e, open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<TimelineEvent>& events) {
  double t0 = 0;
  if (!events.empty()) {
    t0 = std::numeric_limits<double>::infinity();
    for (auto& e : events) t0 = std::min(t0, e.start_us);
  }
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    out += first ? "\n" : ",\n";
    first = false;
  };
  // Viewers name a track by its thread_name metadata; one per worker that ran anything.
  std::set<int> workers;
  for (auto& e : events) workers.insert(e.worker);
  for (int w : workers) {
    sep();
    out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(w) +
           ",\"args\":{\"name\":" + json_string("worker " + std::to_string(w)) + "}}";
  }
  for (auto& e : events) {
    sep();
    out += "{\"name\":" + json_string(e.name) + ",\"cat\":" + json_string(e.kind) +
           ",\"ph\":\"X\",\"ts\":" + json_number(e.start_us - t0) +
           ",\"dur\":" + json_number(std::max(0.0, e.end_us - e.start_us)) +
           ",\"pid\":0,\"tid\":" + std::to_string(e.worker) + ",\"args\":{\"stage\":" + std::to_string(e.stage) +
           ",\"microbatch\":" + std::to_string(e.microbatch) + "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f)
    throw Error("write_chrome_trace: cannot open '" + path + "' for writing (" + std::strerror(errno) +
                "); check that its directory exists and is writable");
  f.write(out.data(), std::streamsize(out.size()));
  f.close();
  if (!f)
    throw Error("write_chrome_trace: writing '" + path + "' failed (" + std::strerror(errno) +
                "); check the free space on its file system");
}

std::vector<double> idle_fractions(const std::vector<TimelineEvent>& events, int num_workers) {
  if (num_workers < 0)
    throw ValueError("idle_fractions: num_workers must be >= 0, got " + std::to_string(num_workers));
  std::vector<double> idle(size_t(num_workers), 0.0);
  if (events.empty()) return idle;
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  std::vector<std::vector<std::pair<double, double>>> busy(static_cast<size_t>(num_workers));
  for (auto& e : events) {
    if (e.worker < 0 || e.worker >= num_workers)
      throw ValueError("idle_fractions: event '" + e.name + "' is on worker " + std::to_string(e.worker) +
                       ", outside the " + std::to_string(num_workers) + " workers; pass the pipeline's worker count");
    t0 = std::min(t0, e.start_us);
    t1 = std::max(t1, e.end_us);
    if (is_stage_task(e.kind)) busy[size_t(e.worker)].emplace_back(e.start_us, e.end_us);
  }
  const double span = t1 - t0;
  if (!(span > 0)) return idle;
  for (size_t w = 0; w < idle.size(); ++w) idle[w] = std::clamp(1.0 - union_length(busy[w]) / span, 0.0, 1.0);
  return idle;
}

namespace {
bool task_kind_of(const std::string& name, TaskKind& kind) {
  static const std::pair<const char*, TaskKind> kinds[] = {{"forward", TaskKind::forward},
                                                           {"backward", TaskKind::backward},
                                                           {"backward_input", TaskKind::backward_input},
                                                           {"backward_weight", TaskKind::backward_weight}};
  for (auto& [n, k] : kinds)
    if (name == n) {
      kind = k;
      return true;
    }
  return false;
}
}  // namespace

TaskTimes measured_task_times(const std::vector<TimelineEvent>& events) {
  TaskTimes r;
  std::map<std::pair<TaskKind, int>, std::pair<double, int>> sums;
  for (const auto& e : events) {
    TaskKind k;
    if (!task_kind_of(e.kind, k)) continue;
    const double took = std::max(0.0, e.end_us - e.start_us);
    r.per_task[{k, e.stage, e.microbatch}] = took;
    auto& [sum, n] = sums[{k, e.stage}];
    sum += took;
    ++n;
  }
  for (auto& [key, sn] : sums) r.mean[key] = sn.first / sn.second;
  return r;
}

double TaskTimes::operator()(const Task& t) const {
  if (auto it = per_task.find({t.kind, t.stage, t.microbatch}); it != per_task.end()) return it->second;
  if (auto it = mean.find({t.kind, t.stage}); it != mean.end()) return it->second;
  throw ValueError("TaskTimes: no measured time for " + t.to_string() + " nor for any task of its kind and stage; "
                   "measure a timeline of the same pipeline (step.timeline())");
}

}  // namespace tessel::pipeline
