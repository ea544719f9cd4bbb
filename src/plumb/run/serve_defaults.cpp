// Per-domain serving defaults (see serve_defaults.h).
#include "plumb/run/serve_defaults.h"

#include <vector>

namespace plumb::run {

namespace {

struct DomainDefaults {
  const char* domain_prefix;  // matched against the start of WorkloadInfo::domain
  double bound_s;
  int64_t max_batch;
  const char* source;
};

const std::vector<DomainDefaults>& domain_table() {
  static const std::vector<DomainDefaults> table = {
      {"recommendation", 0.020, 100,
       "Facebook inference study, Table 1: recommendation, latency tens of ms, batch 1-100"},
      {"machine translation", 0.050, 8,
       "Facebook inference study, Table 1: seq2seq, latency tens of ms, batch 1-8"},
      {"image classification", 0.100, 16,
       "Facebook inference study, Table 1: computer vision has no strict latency constraint; "
       "plumb takes 100 ms"},
      {"video classification", 0.100, 4,
       "Facebook inference study, Table 1: computer vision has no strict latency constraint; "
       "plumb takes 100 ms"},
      {"object detection", 0.100, 4,
       "MLPerf Inference server bound for object detection (SSD-ResNet34): 100 ms"},
      {"speech recognition", 1.0, 16, "MLPerf Inference server bound for speech (RNN-T): 1000 ms"},
  };
  return table;
}

}  // namespace

ServeDefaults serve_defaults(const WorkloadInfo& info) {
  ServeDefaults d;
  d.bound_s = 0.100;
  d.max_batch = 16;
  d.source = "no published bound for this domain; plumb takes 100 ms, an interactive response";
  for (const auto& row : domain_table()) {
    if (info.domain.rfind(row.domain_prefix, 0) != 0) continue;
    d.bound_s = row.bound_s;
    d.max_batch = row.max_batch;
    d.source = row.source;
    break;
  }
  d.max_wait_s = default_max_wait_s(d.bound_s);
  return d;
}

double default_max_wait_s(double bound_s) {
  constexpr double kWaitShareOfBound = 0.05;
  return kWaitShareOfBound * bound_s;
}

}  // namespace plumb::run
