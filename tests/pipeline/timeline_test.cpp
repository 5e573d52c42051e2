// Measured pipeline timelines: the Chrome trace holds one complete event per instruction at
// times relative to the first, a named track per worker and properly escaped strings; the
// idle fractions are the bubble a hand-computed timeline has.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessel/error.h"
#include "tessel/pipeline.h"

namespace pp = tessel::pipeline;

namespace {

// Wall-clock microseconds since the epoch, as a real run records them (exact in a double).
constexpr double kBase = 1'700'000'000'000'000.0;

pp::TimelineEvent event(int worker, std::string name, std::string kind, int stage, int microbatch, double start,
                        double end) {
  return {worker, std::move(name), std::move(kind), stage, microbatch, kBase + start, kBase + end};
}

// Two workers, listed out of time order. Worker 0 runs stage tasks for 40 us of the 80 us
// span, worker 1 for 30 us (its receive and bookkeeping count as idle).
std::vector<pp::TimelineEvent> two_worker_timeline() {
  return {
      event(1, "other", "other", -1, -1, 42, 80),
      event(0, "B(s=0,m=0)", "backward", 0, 0, 50, 70),
      event(0, "F(s=0,m=0)", "forward", 0, 0, 0, 10),
      event(1, "Bw(s=1,m=0)", "backward_weight", 1, 0, 32, 42),
      event(0, "F(s=0,m=1)", "forward", 0, 1, 10, 20),
      event(1, "recv %3 <- w0", "recv", -1, -1, 10, 12),
      event(0, "send %3 -> w1", "send", -1, -1, 20, 22),
      event(1, "F(s=1,m=0)", "forward", 1, 0, 12, 22),
      event(1, "Bi(s=1,m=0)", "backward_input", 1, 0, 22, 32),
  };
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A file under the temp directory, unique per process and test, removed afterwards.
class TempFile {
 public:
  explicit TempFile(const std::string& stem)
      : path_(std::filesystem::temp_directory_path() /
              (stem + "_" + std::to_string(::getpid()) + ".json")) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST(ChromeTrace, WritesCompleteEventsRelativeToTheEarliestStart) {
  TempFile file("tessel_timeline_trace");
  pp::write_chrome_trace(file.path().string(), two_worker_timeline());
  const std::string s = read_all(file.path());
  EXPECT_EQ(s.rfind("{\"traceEvents\":[", 0), 0u) << s;
  EXPECT_NE(s.find("\"displayTimeUnit\":\"ms\""), std::string::npos) << s;
  EXPECT_NE(s.find("{\"name\":\"F(s=0,m=0)\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":0,\"dur\":10,"
                   "\"pid\":0,\"tid\":0,\"args\":{\"stage\":0,\"microbatch\":0}}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("{\"name\":\"Bi(s=1,m=0)\",\"cat\":\"backward_input\",\"ph\":\"X\",\"ts\":22,\"dur\":10,"
                   "\"pid\":0,\"tid\":1,\"args\":{\"stage\":1,\"microbatch\":0}}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("{\"name\":\"recv %3 <- w0\",\"cat\":\"recv\",\"ph\":\"X\",\"ts\":10,\"dur\":2,"
                   "\"pid\":0,\"tid\":1,\"args\":{\"stage\":-1,\"microbatch\":-1}}"),
            std::string::npos)
      << s;
  // One X event per instruction.
  size_t count = 0;
  for (size_t at = s.find("\"ph\":\"X\""); at != std::string::npos; at = s.find("\"ph\":\"X\"", at + 1)) ++count;
  EXPECT_EQ(count, two_worker_timeline().size());
}

TEST(ChromeTrace, NamesEachWorkersTrack) {
  TempFile file("tessel_timeline_names");
  pp::write_chrome_trace(file.path().string(), two_worker_timeline());
  const std::string s = read_all(file.path());
  for (int w : {0, 1}) {
    EXPECT_NE(s.find("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(w) +
                     ",\"args\":{\"name\":\"worker " + std::to_string(w) + "\"}}"),
              std::string::npos)
        << s;
  }
}

TEST(ChromeTrace, KeepsFractionalMicroseconds) {
  TempFile file("tessel_timeline_fraction");
  pp::write_chrome_trace(file.path().string(), {event(0, "a", "forward", 0, 0, 1, 2), event(0, "b", "other", -1, -1, 3.5, 4.75)});
  const std::string s = read_all(file.path());
  EXPECT_NE(s.find("\"ts\":2.5,\"dur\":1.25"), std::string::npos) << s;
}

TEST(ChromeTrace, EscapesQuotesBackslashesAndControlCharacters) {
  TempFile file("tessel_timeline_escape");
  pp::write_chrome_trace(file.path().string(), {event(0, "say \"hi\"\\now\n\x01", "other", -1, -1, 0, 1)});
  const std::string s = read_all(file.path());
  EXPECT_NE(s.find(R"("name":"say \"hi\"\\now\n\u0001")"), std::string::npos) << s;
}

TEST(ChromeTrace, WritesAnEmptyTraceForNoEvents) {
  TempFile file("tessel_timeline_empty");
  pp::write_chrome_trace(file.path().string(), {});
  const std::string s = read_all(file.path());
  EXPECT_NE(s.find("\"traceEvents\":["), std::string::npos) << s;
  EXPECT_EQ(s.find("\"ph\""), std::string::npos) << s;
}

TEST(ChromeTrace, UnwritablePathThrowsNamingThePath) {
  const std::string path = "/nonexistent_tessel_dir/sub/trace.json";
  try {
    pp::write_chrome_trace(path, two_worker_timeline());
    FAIL() << "expected tessel::Error";
  } catch (const tessel::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(IdleFractions, CountOnlyStageTasksAsBusy) {
  const std::vector<double> idle = pp::idle_fractions(two_worker_timeline(), 2);
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_DOUBLE_EQ(idle[0], 1.0 - 40.0 / 80.0);
  EXPECT_DOUBLE_EQ(idle[1], 1.0 - 30.0 / 80.0);
}

TEST(IdleFractions, WorkerWithoutEventsIsFullyIdle) {
  const std::vector<double> idle = pp::idle_fractions(two_worker_timeline(), 3);
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_DOUBLE_EQ(idle[2], 1.0);
}

TEST(IdleFractions, ZeroWithoutEventsOrWithAnEmptySpan) {
  EXPECT_EQ(pp::idle_fractions({}, 2), std::vector<double>(2, 0.0));
  EXPECT_EQ(pp::idle_fractions({event(0, "F", "forward", 0, 0, 5, 5), event(1, "F", "forward", 1, 0, 5, 5)}, 2),
            std::vector<double>(2, 0.0));
}

TEST(IdleFractions, EventOnAnUnknownWorkerIsRejected) {
  EXPECT_THROW(pp::idle_fractions({event(2, "F", "forward", 0, 0, 0, 1)}, 2), tessel::ValueError);
}
