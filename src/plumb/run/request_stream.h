// The requests a token-level server is offered (plumb serve on a generative workload): when each
// arrives and how many prompt and output tokens it has, all drawn before the run from a seeded
// generator, so that schedulers and precisions compared on one seed see the same requests.
//
// Arrivals: a gamma renewal process at a mean rate, its shape the burstiness b (vLLM's benchmark
// convention): inter-arrival gaps ~ Gamma(shape b, scale 1 / (rate b)), mean 1 / rate, coefficient
// of variation 1 / sqrt(b). b = 1 is the Poisson process; b < 1 clusters arrivals in bursts.
// Lengths: fixed, uniform over an inclusive range, or pairs read from a file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace plumb::run {

struct TokenRequest {
  double arrival_s = 0;  // seconds from the start of the run
  int64_t prompt = 1;    // prompt tokens
  int64_t output = 1;    // output tokens, the first from the prefill
  int64_t positions() const { return prompt + output; }
};

// An inclusive range of token counts; low == high is a fixed length.
struct LengthRange {
  int64_t low = 1, high = 1;
};

// Where requests' lengths come from: one pair drawn uniformly from `pairs` (a length file) when
// it is not empty, else a prompt and an output length drawn independently from their ranges.
struct LengthMix {
  LengthRange prompt{128, 128}, output{64, 64};
  std::vector<std::pair<int64_t, int64_t>> pairs;  // prompt_tokens, output_tokens
  std::string file;                                // where the pairs came from

  // "prompt 32-256, output 16-128 tokens (uniform)", "lengths from FILE (N pairs)".
  std::string describe() const;
  // The most positions (prompt + output) a request of this mix can take.
  int64_t longest() const;
  int64_t longest_prompt() const;
  int64_t longest_output() const;
};

// "128" (fixed) or "32-256" (uniform, inclusive). Throws UsageError naming `flag` for anything
// else, a length below 1 (`minimum`) or a range whose low end is above its high end.
LengthRange parse_length_range(const std::string& flag, const std::string& text,
                               int64_t minimum = 1);

// A length file: one "prompt_tokens,output_tokens" pair per line (blank lines and lines starting
// with '#' skipped). Throws UsageError naming the file and line for a line that is not two
// positive integers, and for a file that cannot be read or holds no pair.
std::vector<std::pair<int64_t, int64_t>> read_length_file(const std::string& path);

// Gaps of a gamma renewal process at `rate` per second with shape `burstiness`, `count`
// arrivals, seeded: seconds from the start, ascending. Burstiness 1 gives exactly
// poisson_arrivals(rate, count, seed). Throws UsageError for a rate or burstiness that is not
// a positive number.
std::vector<double> gamma_arrivals(double rate, double burstiness, size_t count, uint64_t seed);

// One request per arrival, lengths drawn from `mix` with `seed`.
std::vector<TokenRequest> draw_requests(const LengthMix& mix, const std::vector<double>& arrivals_s,
                                        uint64_t seed);

}  // namespace plumb::run
