// The competition check behind the "other processes compete for the CPU" warning: parsing of
// /proc/stat, the arithmetic, and live checks that a busy process elsewhere is counted while
// this process's own work (such as the run that just ended) is not.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "plumb/platform/cpu_competition.h"
#include "plumb/platform/environment.h"

namespace plumb::platform {
namespace {

using std::chrono::milliseconds;

TEST(CpuCompetition, ParsesTheAggregateCpuLine) {
  // user nice system idle iowait irq softirq steal guest guest_nice, at 100 ticks per second.
  const std::string stat =
      "cpu  100 20 30 400 50 6 7 8 9 10\n"
      "cpu0 50 10 15 200 25 3 3 4 4 5\n"
      "intr 12345\n";
  const auto busy = parse_busy_seconds(stat, 100);
  ASSERT_TRUE(busy.has_value());
  EXPECT_DOUBLE_EQ(*busy, 1.63);  // (100 + 20 + 30 + 6 + 7) / 100: not idle, iowait, steal, guest
}

TEST(CpuCompetition, RejectsTextWithoutAValidCpuLine) {
  EXPECT_FALSE(parse_busy_seconds("cpu0 1 2 3 4 5 6 7 8\n", 100).has_value());  // per-core only
  EXPECT_FALSE(parse_busy_seconds("cpu  1 2 3 four 5 6 7 8\n", 100).has_value());
  EXPECT_FALSE(parse_busy_seconds("cpu  1 2 3\n", 100).has_value());
  EXPECT_FALSE(parse_busy_seconds("cpu  1 2 3 4 5 6 7 8\n", 0).has_value());
  EXPECT_FALSE(parse_busy_seconds("", 100).has_value());
}

TEST(CpuCompetition, OtherBusyCoresSubtractsThisProcess) {
  EXPECT_DOUBLE_EQ(other_busy_cores(10.0, 12.0, 0.5, 2.0), 0.75);  // (2 - 0.5) / 2 s
  EXPECT_DOUBLE_EQ(other_busy_cores(10.0, 12.0, 0.0, 2.0), 1.0);
  EXPECT_DOUBLE_EQ(other_busy_cores(10.0, 12.0, 2.2, 2.0), 0.0);  // tick rounding: not < 0
  EXPECT_DOUBLE_EQ(other_busy_cores(10.0, 12.0, 0.0, 0.0), 0.0);
}

// Spins on one core until `seconds` have passed, touching nothing shared.
void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile unsigned long counter = 0;
  while (std::chrono::steady_clock::now() < end) counter = counter + 1;
}

TEST(CpuCompetition, ABusyProcessElsewhereIsCountedAndWarnedAbout) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spin_for(5.0);
    _exit(0);
  }
  std::this_thread::sleep_for(milliseconds(50));  // let it start spinning
  const auto busy = sample_other_busy_cores(milliseconds(300));
  const Environment env = capture_environment(1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(busy.has_value());
  EXPECT_GE(*busy, 0.7);  // one core's worth, less tick rounding
  EXPECT_TRUE(std::any_of(env.warnings.begin(), env.warnings.end(), [](const std::string& w) {
    return w.find("other processes kept") != std::string::npos;
  })) << "no competition warning while another process spins";
}

TEST(CpuCompetition, ThisProcessesOwnWorkIsNotCompetition) {
  // What an interleaved series looks like from the next run: the machine has been busy with
  // plumb itself. Here the busy thread even keeps going during the sample.
  std::atomic<bool> stop{false};
  std::thread busy_thread([&] {
    volatile unsigned long counter = 0;
    while (!stop.load(std::memory_order_relaxed)) counter = counter + 1;
  });
  std::this_thread::sleep_for(milliseconds(50));
  const auto busy = sample_other_busy_cores(milliseconds(300));
  stop = true;
  busy_thread.join();
  ASSERT_TRUE(busy.has_value());
  EXPECT_LT(*busy, kCompetingBusyCores);
}

}  // namespace
}  // namespace plumb::platform
