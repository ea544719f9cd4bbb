// Local worker processes of plumb dist: fork/exec, the world's variables, and the wait that
// stops the others when one dies (dist_launcher.h).
#include "plumb/jobs/dist_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/run/process_group.h"

namespace plumb::jobs {
namespace {

namespace fs = std::filesystem;

// In the child: the world's variables, the spec and the cores, then this binary as a worker.
[[noreturn]] void exec_dist_worker(const DistSpec& s, int rank, int workers, int port,
                                   const fs::path& result, const std::vector<int>& cpus,
                                   const run::ShapedLink* link) {
  if (link != nullptr && !link->enter()) {
    std::cerr << "plumb dist: worker could not enter network namespace " << link->name() << '\n';
    _exit(1);
  }
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(workers).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  setenv(kDistLauncherVariable, "1", 1);
  setenv(kDistSpecVariable, json_text(nlohmann::json(s)).c_str(), 1);
  setenv(kDistResultVariable, result.c_str(), 1);
  std::vector<std::string> cpu_text;
  for (int c : cpus) cpu_text.push_back(std::to_string(c));
  setenv(kDistCpusVariable, join(cpu_text, ",").c_str(), 1);
  execl("/proc/self/exe", "plumb", "_dist-worker", static_cast<char*>(nullptr));
  _exit(127);
}

// Stops the workers still running: SIGTERM, up to 5 s to exit, then SIGKILL. The others would
// wait for a dead peer until the collective timeout.
void stop_dist_workers(const std::map<pid_t, int>& ranks) {
  for (const auto& [other, r] : ranks) kill(other, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    bool alive = false;
    for (const auto& [other, r] : ranks) alive = alive || waitpid(other, nullptr, WNOHANG) == 0;
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (const auto& [other, r] : ranks) kill(other, SIGKILL);
}

}  // namespace

DistWorkerResult launch_local_world(const DistSpec& s, int workers, const fs::path& dir,
                                    const run::ShapedLink* link) {
  const auto cpus = platform::allowed_cpus();
  const int port = run::free_loopback_port();
  const fs::path result = dir / fmt::format("rank0-{}.json", workers);
  std::map<pid_t, int> ranks;
  for (int r = 0; r < workers; ++r) {
    std::vector<int> mine(cpus.begin() + r * s.threads_per_worker,
                          cpus.begin() + (r + 1) * s.threads_per_worker);
    const pid_t pid = fork();
    if (pid < 0) throw run::DistError("cannot start a worker process (fork failed)");
    if (pid == 0) exec_dist_worker(s, r, workers, port, result, mine, link);
    ranks[pid] = r;
  }
  std::string failure;
  bool refused = false;  // a worker exited with a usage error (its line is on stderr already)
  while (!ranks.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    const auto it = ranks.find(pid);
    if (it == ranks.end()) continue;
    const int rank = it->second;
    ranks.erase(it);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || !failure.empty()) continue;
    refused = WIFEXITED(status) && WEXITSTATUS(status) == 2;
    failure = WIFSIGNALED(status) ? fmt::format("worker rank {} of {} was killed by signal {}",
                                                rank, workers, WTERMSIG(status))
                                  : fmt::format("worker rank {} of {} exited with status {}", rank,
                                                workers, WEXITSTATUS(status));
    stop_dist_workers(ranks);
  }
  if (refused)
    throw UsageError(
        fmt::format("the {} worker(s) refused the configuration (the reason is above)", workers));
  if (!failure.empty())
    throw run::DistError(failure + "; the other workers were stopped and nothing was stored");
  std::ifstream in(result);
  if (!in) throw run::DistError("rank 0 finished without writing its result");
  return dist_worker_from_json(nlohmann::ordered_json::parse(in));
}

}  // namespace plumb::jobs
