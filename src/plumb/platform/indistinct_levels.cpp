// Merging memory levels whose bandwidth plateaus agree (see indistinct_levels.h).
#include "plumb/platform/indistinct_levels.h"

#include <algorithm>

#include <fmt/format.h>

namespace plumb::platform {
namespace {

double triad_or_read(const LevelBandwidth& l) {
  return l.triad > 0 ? l.triad : l.read;
}

}  // namespace

std::vector<LevelMerge> indistinct_levels(const std::vector<LevelBandwidth>& levels) {
  std::vector<LevelMerge> merges;
  // summarize_levels orders by level, then threads: collect each thread count's levels in order.
  std::vector<int> thread_counts;
  for (const LevelBandwidth& l : levels)
    if (std::find(thread_counts.begin(), thread_counts.end(), l.threads) == thread_counts.end())
      thread_counts.push_back(l.threads);
  for (int threads : thread_counts) {
    std::vector<const LevelBandwidth*> chain;  // fastest first
    for (const LevelBandwidth& l : levels)
      if (l.threads == threads) chain.push_back(&l);
    if (chain.size() < 2) continue;
    std::vector<std::string> survivor(chain.size());
    survivor.back() = chain.back()->level;
    for (size_t i = chain.size() - 1; i-- > 0;) {
      const double faster = triad_or_read(*chain[i]), slower = triad_or_read(*chain[i + 1]);
      if (faster <= 0 || slower <= 0 || faster > slower * (1 + kIndistinctLevelTolerance)) {
        survivor[i] = chain[i]->level;
        continue;
      }
      survivor[i] = survivor[i + 1];
      LevelMerge m;
      m.level = chain[i]->level;
      m.into = survivor[i];
      m.threads = threads;
      m.triad = faster;
      m.into_triad = slower;
      m.note = fmt::format(
          "{} ({:.0f} KiB working set) streams at {:.1f} GB/s with {} thread(s), within {:.0f}% "
          "of {}'s {:.1f} GB/s: at this thread count the {} gives no more bandwidth than {} (the "
          "misses one core keeps in flight can bound both, or a virtual machine does not hold "
          "the share of a shared cache the CPU reports); merged into {}",
          m.level, chain[i]->working_set_bytes / 1024.0, faster / 1e9, threads,
          100 * kIndistinctLevelTolerance, chain[i + 1]->level, slower / 1e9, m.level,
          chain[i + 1]->level, m.into);
      merges.push_back(std::move(m));
    }
  }
  return merges;
}

}  // namespace plumb::platform
