// Reuse-or-measure for machine probes (see stored_or_fresh_probe.h).
#include "plumb/jobs/stored_or_fresh_probe.h"

#include <iostream>

#include <fmt/format.h>

#include "plumb/platform/cpu_features.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/probe.h"
#include "plumb/store/probe_record.h"

namespace plumb::jobs {

ProbeChoice current_probe(store::ResultsStore& db, const ProbeRequest& request) {
  const int max_threads = request.max_threads > 0
                              ? request.max_threads
                              : static_cast<int>(platform::allowed_cpus().size());
  const platform::Environment env = platform::capture_environment(max_threads);
  const std::string machine = platform::machine_key(env);
  if (!request.refresh) {
    auto found = db.latest_probe(machine, request.thorough);
    if (found &&
        found->document.value("plumb_probe_version", 0) == platform::kProbeDocumentVersion &&
        found->document.value("max_threads", 0) >= max_threads)
      return {std::move(*found), true};
  }
  std::cerr << fmt::format("probing this machine ({}, up to {} threads) ...\n",
                           request.thorough ? "thorough" : "quick", max_threads);
  platform::ProbeOptions options;
  options.thorough = request.thorough;
  options.max_threads = max_threads;
  store::StoredProbe probe;
  probe.document = platform::run_probe(
      options, [](const std::string& stage) { std::cerr << "  " << stage << '\n'; });
  probe.machine = machine;
  probe.mode = probe.document.at("mode").get<std::string>();
  probe.measured_at = probe.document.at("measured_at").get<std::string>();
  probe.seconds = probe.document.at("seconds").get<double>();
  probe.environment = env;
  // Stored only now that it is complete: an interrupted probe leaves nothing behind.
  probe.id = db.save_probe(probe);
  return {std::move(probe), false};
}

}  // namespace plumb::jobs
