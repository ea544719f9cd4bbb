// The competition check behind the "other processes compete for the CPU" warning: parsing of
// /proc/stat, the arithmetic, and live checks that a busy process elsewhere is counted while
// this process's own work (such as the run that just ended) is not.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
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

// CPU time a thread of this process has used, from its own clock.
double thread_cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

TEST(CpuCompetition, ThisProcessesOwnWorkIsNotCompetition) {
  // What an interleaved series looks like from the next run: the machine has been busy with
  // plumb itself. Here a busy thread of this process even keeps going during the sample. What
  // else the machine runs meanwhile may add to the figure, so the check is on the accounting:
  // every second the busy thread ran in the window is counted as this process's own and taken
  // off the machine's busy time.
  std::atomic<bool> stop{false};
  std::thread busy_thread([&] {
    volatile unsigned long counter = 0;
    while (!stop.load(std::memory_order_relaxed)) counter = counter + 1;
  });
  clockid_t busy_clock{};
  ASSERT_EQ(pthread_getcpuclockid(busy_thread.native_handle(), &busy_clock), 0);
  std::this_thread::sleep_for(milliseconds(50));
  const double spun_before = thread_cpu_seconds(busy_clock);
  const auto window = sample_cpu_window(milliseconds(500));
  const double spun = thread_cpu_seconds(busy_clock) - spun_before;
  stop = true;
  busy_thread.join();
  ASSERT_TRUE(window.has_value());
  // A tenth of a core at least, even on a crowded machine: enough to tell counted from not.
  ASSERT_GE(spun, 0.05) << "the busy thread hardly ran";
  // The bracketing reads of the thread's clock add a fraction of a millisecond around the
  // window; 10 ms covers that and is far below what the thread ran.
  constexpr double kSlack = 0.01;
  EXPECT_GE(window->own_cpu_s, spun - kSlack) << "the busy thread was not counted as our own";
  EXPECT_LE(other_busy_cores(*window) * window->wall_s,
            std::max(0.0, window->machine_busy_s - spun) + kSlack)
      << "machine busy " << window->machine_busy_s << " s, of which this process "
      << window->own_cpu_s << " s, the busy thread " << spun << " s";
}

}  // namespace
}  // namespace plumb::platform
