// Arrivals and lengths of a token-level server's requests (see request_stream.h).
#include "plumb/run/request_stream.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/serving_loop.h"

namespace plumb::run {

namespace {

// A whole positive integer from `text` (all of it), or -1.
int64_t parse_count(const std::string& text) {
  if (text.empty() || text.size() > 12 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(text);
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

int64_t draw(const LengthRange& range, std::mt19937_64& generator) {
  if (range.low == range.high) return range.low;
  return std::uniform_int_distribution<int64_t>(range.low, range.high)(generator);
}

}  // namespace

std::string LengthMix::describe() const {
  if (!pairs.empty()) return fmt::format("lengths from {} ({} pairs)", file, pairs.size());
  const auto text = [](const LengthRange& r) {
    return r.low == r.high ? std::to_string(r.low) : fmt::format("{}-{}", r.low, r.high);
  };
  const bool uniform = prompt.low != prompt.high || output.low != output.high;
  return fmt::format("prompt {}, output {} tokens{}", text(prompt), text(output),
                     uniform ? " (uniform)" : "");
}

int64_t LengthMix::longest() const {
  if (pairs.empty()) return prompt.high + output.high;
  int64_t most = 0;
  for (const auto& [p, o] : pairs) most = std::max(most, p + o);
  return most;
}

int64_t LengthMix::longest_prompt() const {
  if (pairs.empty()) return prompt.high;
  int64_t most = 0;
  for (const auto& pair : pairs) most = std::max(most, pair.first);
  return most;
}

int64_t LengthMix::longest_output() const {
  if (pairs.empty()) return output.high;
  int64_t most = 0;
  for (const auto& pair : pairs) most = std::max(most, pair.second);
  return most;
}

LengthRange parse_length_range(const std::string& flag, const std::string& text, int64_t minimum) {
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format(
        "{} '{}': {}; give a token count (128) or an inclusive range (32-256), at least {}", flag,
        text, why, minimum));
  };
  const auto dash = text.find('-', 1);
  const std::string low_text = trimmed(dash == std::string::npos ? text : text.substr(0, dash));
  const std::string high_text = trimmed(dash == std::string::npos ? text : text.substr(dash + 1));
  if (!low_text.empty() && low_text[0] == '-') throw bad("a length cannot be negative");
  const int64_t low = parse_count(low_text), high = parse_count(high_text);
  if (low < 0 || high < 0) throw bad("not a whole number of tokens");
  if (low < minimum || high < minimum) throw bad("too short");
  if (low > high) throw bad("the low end is above the high end");
  return {low, high};
}

std::vector<std::pair<int64_t, int64_t>> read_length_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--lengths: cannot read '{}'", path));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trimmed(line);
    if (line.empty() || line[0] == '#') continue;
    const auto comma = line.find(',');
    const int64_t prompt =
        comma == std::string::npos ? -1 : parse_count(trimmed(line.substr(0, comma)));
    const int64_t output =
        comma == std::string::npos ? -1 : parse_count(trimmed(line.substr(comma + 1)));
    if (prompt < 1 || output < 1)
      throw UsageError(
          fmt::format("--lengths {} line {}: '{}' is not two positive token counts "
                      "'prompt_tokens,output_tokens'",
                      path, number, line));
    pairs.emplace_back(prompt, output);
  }
  if (pairs.empty())
    throw UsageError(fmt::format(
        "--lengths {}: no 'prompt_tokens,output_tokens' line in it; give one pair per line", path));
  return pairs;
}

std::vector<double> gamma_arrivals(double rate, double burstiness, size_t count, uint64_t seed) {
  if (!(burstiness > 0) || !std::isfinite(burstiness))
    throw UsageError(fmt::format(
        "--burstiness must be a positive number (1 = Poisson, below 1 burstier), got {}",
        burstiness));
  if (burstiness == 1) return poisson_arrivals(rate, count, seed);
  if (!(rate > 0) || !std::isfinite(rate))
    throw UsageError(fmt::format(
        "an arrival rate must be a positive number of requests per second, got {}", rate));
  // Mean gap 1 / rate whatever the shape: scale 1 / (rate * shape).
  return arrivals_from_gaps(std::gamma_distribution<double>(burstiness, 1.0 / (rate * burstiness)),
                            count, seed);
}

std::vector<TokenRequest> draw_requests(const LengthMix& mix, const std::vector<double>& arrivals_s,
                                        uint64_t seed) {
  // Lengths from a generator of their own: the same seed gives the same lengths at any rate.
  std::mt19937_64 generator(seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<TokenRequest> requests;
  requests.reserve(arrivals_s.size());
  for (double at : arrivals_s) {
    TokenRequest r;
    r.arrival_s = at;
    if (!mix.pairs.empty()) {
      const auto& pair =
          mix.pairs[std::uniform_int_distribution<size_t>(0, mix.pairs.size() - 1)(generator)];
      r.prompt = pair.first;
      r.output = pair.second;
    } else {
      r.prompt = draw(mix.prompt, generator);
      r.output = draw(mix.output, generator);
    }
    requests.push_back(r);
  }
  return requests;
}

}  // namespace plumb::run
