// Beyond the machines here: an alpha-beta model of a data-parallel step, fitted to the worlds
// plumb dist measured, projected to N workers on a link of given bandwidth and latency.
//
// Ring all-reduce of b bytes over N workers: 2(N-1) steps, each paying the link latency alpha
// and moving b/N bytes per worker: T(b, N) = 2(N-1) alpha + b 2(N-1)/N / beta.
// The step: backward launches the gradient buckets at the times the one-worker world measured
// (relative to its first gradient); one communication thread all-reduces them in order, each
// starting when it is launched and the previous one is done; what is still in flight when
// backward ends is exposed. step(N) = compute + exposed(N), compute per worker as measured with
// communication running beside it. (Gloo's two threads may overlap two buckets; one lane at
// the bandwidth they reached together stands for both.)
// beta is what the all-reduce reaches inside a step: fitted per measured world from its
// buckets' durations. On a shaped link it is a share of the link's rate (the link efficiency);
// on the unshaped loopback it is what the CPU lets Gloo move beside the training step, and it
// caps every projection on this machine's cores. Pure functions.
#pragma once

#include <string>
#include <vector>

namespace plumb::analysis {

struct BucketTimes {
  double bytes = 0;
  double launched_s = 0;  // since the step's first gradient
  double done_s = 0;
};

// One measured world, as plumb dist stored it (means over its measured steps).
struct DistWorldPoint {
  int workers = 1;
  std::string link;             // "none" or a rate such as "1gbit"
  double link_bytes_per_s = 0;  // the shaped rate in bytes/s, 0 for the unshaped loopback
  double step_s = 0, compute_s = 0, exposed_s = 0, backward_s = 0;
  double throughput = 0;
  std::vector<BucketTimes> buckets;  // a sample step, in launch order
};

// Seconds of one ring all-reduce (see above); 0 for one worker.
double ring_allreduce_seconds(double bytes, int workers, double alpha_s, double beta_bytes_per_s);

// The bandwidth a world's all-reduces reached: the bytes every bucket moved (x 2(N-1)/N) over
// the time any of them was in flight, less their ring steps' latency (Gloo may run two at once,
// so one bucket's own duration says little). 0 for one worker or no buckets.
double fit_step_bandwidth(const DistWorldPoint& world, double alpha_s);

struct DistModel {
  std::vector<BucketTimes> launches;  // from the one-worker world
  double backward_s = 0;              // its backward pass (first gradient to the last)
  double compute_s = 0;               // per worker beside communication (a multi-worker world)
  double units_per_step = 0;          // per worker
  double one_worker_throughput = 0;
  double cpu_bytes_per_s = 0;  // in-step bandwidth over the unshaped loopback (0: unmeasured)
  double link_efficiency = 1;  // in-step bandwidth / rate on a shaped link (1 if none)
  std::string compute_source;  // which world compute_s comes from
};

// Needs a one-worker world and at least one multi-worker world; throws UsageError otherwise,
// saying what to measure.
DistModel fit_dist_model(const std::vector<DistWorldPoint>& worlds, double alpha_s);

struct DistProjection {
  int workers = 0;
  double link_bytes_per_s = 0;  // 0: the unshaped loopback
  double beta_bytes_per_s = 0;  // the in-step bandwidth the projection uses
  bool cpu_bound = false;       // beta was capped by the CPU-side figure, not the link
  double communication_s = 0;   // all buckets' all-reduce time, back to back
  double exposed_s = 0, step_s = 0, throughput = 0, efficiency = 0;
};

// `link_bytes_per_s` 0: the measured unshaped loopback; else a link of that rate, used at the
// measured link efficiency and capped by the CPU-side bandwidth when one was measured.
DistProjection project_world(const DistModel& model, int workers, double link_bytes_per_s,
                             double alpha_s);

}  // namespace plumb::analysis
