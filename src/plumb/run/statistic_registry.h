// Statistics as registered computations (the idea of google/benchmark's statistics.cc, where a
// statistic is a name and a function of the repetitions; written here for plumb's own set):
// each statistic has a name, one line saying how it is computed, and the computation. The run
// summary (stats.h: every column of a run), serve's latency percentiles and their
// order-statistic interval, and tune's prediction interval are all computed through these, so
// how a figure was computed is said once, beside the code that computes it.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace plumb::run {

// Samples in the order measured (sums run in this order: the mean and stddev of a run are
// bit for bit what they always were) and sorted ascending once. Holds a reference to `measured`.
class Samples {
 public:
  explicit Samples(const std::vector<double>& measured);
  const std::vector<double>& measured() const { return measured_; }
  const std::vector<double>& sorted() const { return sorted_; }
  size_t size() const { return measured_.size(); }
  // Computed once however many statistics ask (a run's summary is taken after every sample).
  double mean() const;
  double stddev() const;

 private:
  const std::vector<double>& measured_;
  std::vector<double> sorted_;
  mutable std::optional<double> mean_, stddev_;
};

// A spread of log values known from more runs than the samples at hand: plumb tune's
// prediction interval takes the mean throughput of the best's runs and plumb compare's
// between-run spread (pooled over stock and best).
struct KnownSpread {
  double center = NAN;  // the interval is centred here
  double log_sd = NAN;  // standard deviation of log values
  double dof = 0;       // its degrees of freedom
  double runs = 0;      // the runs `center` is the mean of
};

// What a statistic may take besides the samples.
struct StatisticParams {
  double q = 0.5;            // the percentiles' quantile
  double confidence = 0.95;  // the intervals'
  std::optional<KnownSpread> spread;
};

// A value and, for interval statistics, its bounds (NaN where undefined or not an interval).
struct Estimate {
  double value = NAN, low = NAN, high = NAN;
};

struct Statistic {
  const char* name;
  const char* how;  // one line: how it is computed
  Estimate (*compute)(const Samples& samples, const StatisticParams& params);
};

namespace statistic {
extern const Statistic kMean, kMedian, kMin, kMax, kStddev, kCv, kCiHalfWidth, kCiRel;
extern const Statistic kPercentile, kPercentileInterval, kPredictionInterval;
}  // namespace statistic

// Every registered statistic, in the order above.
const std::vector<const Statistic*>& registered_statistics();
// The statistic of that name, or nullptr.
const Statistic* find_statistic(std::string_view name);

}  // namespace plumb::run
