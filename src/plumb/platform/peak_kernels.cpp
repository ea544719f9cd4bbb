// The multi-threaded driver of the instruction-peak kernels (see peak_kernels.h): pinned
// threads released together, clock measurements under each engine's own load, and repetitions
// in rounds. The kernels themselves and the choice of sequence per CPU are in
// peak_sequences.cpp.
#include "plumb/platform/peak_kernels.h"

#include "plumb/core/errors.h"
#include "plumb/platform/peak_sequences.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

namespace plumb::platform {
namespace {

using Clock = std::chrono::steady_clock;

struct RunResult {
  double wall = 0;         // first start to last finish
  double slowest = 0;      // the longest start-to-finish of one thread
  double busy = 0;         // the longest CPU time of a thread (wall where unknown)
  bool disturbed = false;  // some thread was preempted (see thread_cpu_seconds)
};

// One timed concurrent run: `threads` pinned threads each run `warmup_iterations` untimed trips,
// then `iterations` timed ones, released together. The warm-up puts the core into the clock
// state the kernel's instructions lead to before the clock starts: a core that lowers its clock
// for wide vectors or tiles does so some hundreds of microseconds into the load, and a short
// timed run would otherwise average the two clocks.
RunResult run_concurrent(PeakKernel kernel, int threads, uint64_t iterations,
                         const std::vector<int>& cpus, uint64_t warmup_iterations = 0) {
  struct alignas(64) Slot {  // one cache line per thread: no false sharing while timing
    Clock::time_point start, end;
    double cpu_seconds = -1;
    volatile double sink = 0;
  };
  std::vector<Slot> slots(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_current_thread(cpus[t % cpus.size()]);
      if (warmup_iterations > 0) kernel(warmup_iterations, &slots[t].sink);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      double cpu0 = thread_cpu_seconds();
      slots[t].start = Clock::now();
      kernel(iterations, &slots[t].sink);
      slots[t].end = Clock::now();
      double cpu1 = thread_cpu_seconds();
      if (cpu0 >= 0 && cpu1 >= 0) slots[t].cpu_seconds = cpu1 - cpu0;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& th : pool) th.join();
  RunResult run;
  Clock::time_point first = slots[0].start, last = slots[0].end;
  for (const Slot& s : slots) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
    double wall = std::chrono::duration<double>(s.end - s.start).count();
    if (s.cpu_seconds >= 0 && s.cpu_seconds < 0.9 * wall) run.disturbed = true;
    run.busy = std::max(run.busy, s.cpu_seconds >= 0 ? std::min(s.cpu_seconds, wall) : wall);
    run.slowest = std::max(run.slowest, wall);
  }
  run.wall = std::chrono::duration<double>(last - first).count();
  return run;
}

// The core clock while `threads` threads are busy at once (the all-core boost clock is often
// lower than the one-core one): every thread runs `iterations` of the add chain after as many
// warm-up trips; the clock of the slowest thread, best of `runs` undisturbed runs. 0 if none was
// undisturbed.
double concurrent_clock_hz(PeakKernel clock, int threads, uint64_t iterations,
                           const std::vector<int>& cpus, int runs = 3) {
  double best = 0;
  for (int tries = 0, good = 0; good < runs && tries < 2 * runs; ++tries) {
    RunResult run = run_concurrent(clock, threads, iterations, cpus, iterations);
    if (run.disturbed || run.slowest <= 0) continue;
    ++good;
    best = std::max(best,
                    static_cast<double>(iterations) * kClockChainCyclesPerIteration / run.slowest);
  }
  return best;
}

// One engine being measured: its kernel, calibration and the points filled in round by round.
struct EngineRun {
  PeakVariant v;
  InstructionPeak peak;
  double trips_per_s = 0;  // one thread's trips per second, updated from each good run
  std::vector<int> good;   // undisturbed repetitions per thread count
  std::vector<double> best_disturbed;
};

EngineRun start_engine(Dtype dtype, const PeakVariant& v, int max_threads,
                       const std::vector<int>& cpus) {
  EngineRun e;
  e.v = v;
  e.peak.dtype = dtype_name(dtype);
  e.peak.engine = v.engine;
  if (v.kernel == nullptr) {
    e.peak.outcome.reason = v.reason;
    return e;
  }
  e.peak.outcome = Outcome::success();
  e.peak.isa = v.isa;
  e.peak.ops_per_instruction = v.ops_per_instruction;
  e.peak.instruction_bits = v.instruction_bits;
  // Calibrate on one thread until a run lasts >= 2 ms; this also warms the vector units up
  // (some Intel cores run wide vectors slower for their first ~10 us). CPU time, not wall
  // time, so that a preempted calibration does not make the timed runs too short to notice
  // the next preemption.
  uint64_t iterations = 1000;
  double t = run_concurrent(v.kernel, 1, iterations, cpus).busy;
  while (t < 2e-3) {
    iterations *= 4;
    t = run_concurrent(v.kernel, 1, iterations, cpus).busy;
  }
  e.trips_per_s = static_cast<double>(iterations) / t;
  for (int threads = 1; threads <= max_threads; ++threads) {
    PeakPoint point;
    point.threads = threads;
    e.peak.by_threads.push_back(point);
  }
  e.good.assign(max_threads, 0);
  e.best_disturbed.assign(max_threads, 0);
  return e;
}

// One repetition of one engine at one thread count (retried once when another process
// preempted a thread), bracketed by clock measurements under the same engine's load: the best
// repetition keeps the higher of the clocks measured just before and just after it, since a
// VM's host moves the core between clock states (the Xeon VM: 3.0, 3.4 and 3.7 GHz idle, 2.1
// to 2.8 GHz under AMX, within a minute) and a clock taken at another moment could belong to
// another state; the higher of the two covers a change of state during the repetition.
void repeat_once(EngineRun& e, int threads, double per_rep, uint64_t clock_trips,
                 const std::vector<int>& cpus) {
  PeakPoint& point = e.peak.by_threads[threads - 1];
  for (int tries = 0; tries < 2; ++tries) {
    const double clock_before =
        clock_trips > 0 ? concurrent_clock_hz(e.v.clock, threads, clock_trips, cpus, 1) : 0;
    auto trips = std::max<uint64_t>(1, static_cast<uint64_t>(e.trips_per_s * per_rep));
    // About a millisecond of warm-up, so the timed run starts in the engine's clock state.
    auto warmup = std::max<uint64_t>(1, static_cast<uint64_t>(e.trips_per_s * 1e-3));
    RunResult run = run_concurrent(e.v.kernel, threads, trips, cpus, warmup);
    if (run.wall <= 0) continue;
    double rate = static_cast<double>(trips) * threads * e.v.ops_per_iteration / run.wall;
    if (run.disturbed) {
      e.best_disturbed[threads - 1] = std::max(e.best_disturbed[threads - 1], rate);
      continue;
    }
    ++e.good[threads - 1];
    // Per-thread rate can fall with more threads (SMT siblings): keep runs near per_rep.
    e.trips_per_s = static_cast<double>(trips) / run.wall;
    if (rate > point.ops_per_s) {
      point.ops_per_s = rate;
      if (clock_trips > 0)
        point.clock_hz =
            std::max(clock_before, concurrent_clock_hz(e.v.clock, threads, clock_trips, cpus, 1));
    }
    return;
  }
}

void finish_engine(EngineRun& e, uint64_t clock_trips, const std::vector<int>& cpus) {
  for (PeakPoint& point : e.peak.by_threads) {
    const int i = point.threads - 1;
    if (e.good[i] == 0) {
      point.ops_per_s = e.best_disturbed[i];
      point.disturbed = true;
    }
    // No undisturbed clock run beside the best repetition: the best of a few afterwards.
    if (clock_trips > 0 && point.clock_hz <= 0)
      point.clock_hz = concurrent_clock_hz(e.v.clock, point.threads, clock_trips, cpus);
    if (point.ops_per_s > e.peak.best_ops_per_s) {
      e.peak.best_ops_per_s = point.ops_per_s;
      e.peak.best_threads = point.threads;
    }
  }
}

// Measures every engine at 1..max_threads threads in rounds: each round runs one repetition of
// every engine at every thread count, and each point keeps its best round. A host's
// disturbance (on a VM, another tenant on the sibling hyperthread halves the throughput of a
// core with no trace inside the guest; seen on the Xeon VM for tens of milliseconds at a time)
// then spoils one round of a point, not all of them, as repetitions back to back would.
std::vector<InstructionPeak> measure_variants(const std::vector<std::pair<Dtype, PeakVariant>>& vs,
                                              int max_threads, double seconds_per_point) {
  std::vector<int> cpus = allowed_cpus();
  if (max_threads <= 0) max_threads = static_cast<int>(cpus.size());
  std::vector<EngineRun> runs;
  for (const auto& [dtype, v] : vs) runs.push_back(start_engine(dtype, v, max_threads, cpus));
  // Clock-kernel trips for ~1 ms per clock measurement (after as many warm-up trips); 0 (no clock)
  // when it cannot be read.
  const double hz_guess = measure_core_clock_hz(0.005);
  const uint64_t clock_trips =
      hz_guess > 0 ? std::max<uint64_t>(
                         1, static_cast<uint64_t>(1e-3 * hz_guess / kClockChainCyclesPerIteration))
                   : 0;
  constexpr int kRounds = 4;
  const double per_rep = std::max(seconds_per_point / kRounds, 2e-3);
  for (int threads = 1; threads <= max_threads; ++threads)
    for (int round = 0; round < kRounds; ++round)
      for (EngineRun& e : runs)
        if (e.peak.outcome.ok()) repeat_once(e, threads, per_rep, clock_trips, cpus);
  std::vector<InstructionPeak> out;
  for (EngineRun& e : runs) {
    if (e.peak.outcome.ok()) finish_engine(e, clock_trips, cpus);
    out.push_back(std::move(e.peak));
  }
  return out;
}

// Only features the CPU really has: a wider one would die on an illegal instruction.
CpuFeatures usable_features(const CpuFeatures& cpu) {
  const CpuFeatures real = detect_cpu_features();
  CpuFeatures usable = cpu;
  for (auto member : {&CpuFeatures::sse2, &CpuFeatures::avx, &CpuFeatures::avx2, &CpuFeatures::fma,
                      &CpuFeatures::avx512f, &CpuFeatures::avx512bw, &CpuFeatures::avx512vl,
                      &CpuFeatures::avx512_vnni, &CpuFeatures::avx512_bf16,
                      &CpuFeatures::avx512_fp16, &CpuFeatures::avx_vnni})
    usable.*member = cpu.*member && real.*member;
  return usable;
}

}  // namespace

std::vector<std::string> vector_sequences(Dtype dtype, const CpuFeatures& cpu,
                                          std::string* reason) {
  std::vector<std::string> out;
  for (const PeakVariant& v : select_vector_variants(dtype, cpu)) {
    if (reason != nullptr) *reason = v.reason;
    if (!v.isa.empty()) out.push_back(v.isa);
  }
  return out;
}

InstructionPeak fastest_sequence(std::vector<InstructionPeak> candidates) {
  PLUMB_ASSERT(!candidates.empty(), "an engine has at least one sequence");
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].outcome.ok() &&
        (!candidates[best].outcome.ok() ||
         candidates[i].best_ops_per_s > candidates[best].best_ops_per_s))
      best = i;
  InstructionPeak out = candidates[best];
  out.sequences.clear();
  for (const InstructionPeak& c : candidates)
    if (c.outcome.ok()) out.sequences.push_back({c.isa, c.best_ops_per_s, c.best_threads});
  return out;
}

InstructionPeak measure_instruction_peak(Dtype dtype, int max_threads, double seconds_per_point) {
  return measure_instruction_peak(dtype, max_threads, seconds_per_point, detect_cpu_features());
}

InstructionPeak measure_instruction_peak(Dtype dtype, int max_threads, double seconds_per_point,
                                         const CpuFeatures& cpu) {
  std::vector<std::pair<Dtype, PeakVariant>> vs;
  for (PeakVariant& v : select_vector_variants(dtype, usable_features(cpu)))
    vs.emplace_back(dtype, v);
  return fastest_sequence(measure_variants(vs, max_threads, seconds_per_point));
}

std::vector<InstructionPeak> measure_engine_peaks(const std::vector<Dtype>& dtypes, int max_threads,
                                                  double seconds_per_point) {
  const CpuFeatures cpu = detect_cpu_features();
  // Every sequence of every engine is measured in the same rounds; `engine_of` says which
  // engine each belongs to, and each engine keeps its fastest.
  std::vector<std::pair<Dtype, PeakVariant>> vs;
  std::vector<size_t> engine_of;
  size_t engines = 0;
  for (Dtype dtype : dtypes) {
    for (PeakVariant& v : select_vector_variants(dtype, cpu)) {
      vs.emplace_back(dtype, v);
      engine_of.push_back(engines);
    }
    ++engines;
    // Only bf16 and int8 have tile instructions (AMX); where the CPU lacks them the matrix
    // engine is listed unsupported with the reason, as the vector one would be.
    if (dtype == Dtype::kBf16 || dtype == Dtype::kInt8) {
      vs.emplace_back(dtype, select_matrix_variant(dtype, cpu));
      engine_of.push_back(engines++);
    }
  }
  std::vector<InstructionPeak> measured = measure_variants(vs, max_threads, seconds_per_point);
  std::vector<std::vector<InstructionPeak>> by_engine(engines);
  for (size_t i = 0; i < measured.size(); ++i)
    by_engine[engine_of[i]].push_back(std::move(measured[i]));
  std::vector<InstructionPeak> out;
  for (auto& candidates : by_engine) out.push_back(fastest_sequence(std::move(candidates)));
  return out;
}

TheoryInput theory_input(const InstructionPeak& peak, double fallback_clock_hz) {
  TheoryInput in;
  in.engine = peak.engine;
  in.dtype = peak.dtype;
  in.instruction = peak.isa;
  in.instruction_bits = peak.instruction_bits;
  in.ops_per_instruction = peak.ops_per_instruction;
  if (!peak.by_threads.empty()) {
    const PeakPoint& one = peak.by_threads.front();
    in.measured_ops_per_s = one.ops_per_s / std::max(1, cores_used_by(one.threads));
    in.clock_hz = one.clock_hz > 0 ? one.clock_hz : fallback_clock_hz;
  }
  return in;
}

InstructionPeak measure_matrix_peak(Dtype dtype, int max_threads, double seconds_per_point) {
  return measure_variants({{dtype, select_matrix_variant(dtype, detect_cpu_features())}},
                          max_threads, seconds_per_point)
      .front();
}

}  // namespace plumb::platform
