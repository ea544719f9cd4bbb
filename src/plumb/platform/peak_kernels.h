// Instruction peaks: how many arithmetic operations per second the cores really retire, per
// dtype, with the widest vector instruction the CPU has at run time, for 1..N threads. This is
// the compute roof of the roofline; the GEMM peak (what a real kernel reaches) is measured
// elsewhere. Torch-free on purpose: the numbers describe the machine, not a library.
//
// Op counting (per instruction, per lane of the destination register):
//   fp64/fp32 FMA (vfmadd231pd/ps) ....... 2 FLOPs (multiply + add)
//   sse2 fallback (mulps + addps pair) .... 2 FLOPs for the pair
//   bf16 vdpbf16ps (fp32 lane) ............ 4 FLOPs (two bf16 products + two adds)
//   fp16 vfmadd231ph (fp16 lane) .......... 2 FLOPs
//   int8 vpdpbusd (32-bit lane) ........... 8 int ops (four u8 x s8 products + four adds)
//   int8 without VNNI (vpmaddubsw + vpmaddwd + vpaddd, what oneDNN runs: zmm with AVX-512BW,
//     ymm with AVX2) counts the same 8 ops per 32-bit lane for the three instructions, i.e.
//     the useful work of one vpdpbusd.
// bf16 without avx512_bf16 and fp16 without avx512_fp16 are reported unsupported, never
// emulated: an emulated peak would be a different, misleading roof.
//
// Two engines: the vector units (above) and, where the CPU has AMX, the matrix engine
// (tile_kernels.h: tdpbf16ps for bf16, tdpbusd for int8). A dtype's roof is the faster one.
// An engine's peak is the fastest sequence an engine on this CPU runs its work with, not one
// plumb chose: where several forms are timed (int8 on AVX2 without VNNI: the three
// instructions in oneDNN's order and in plumb's 4-chain loop), each is listed and the fastest
// is the engine's.
//
// The clock of each point is measured while the same engine is busy (a dependent add chain
// interleaved with the engine's instructions, which never set the pace): cores that lower
// their clock for wide vector or tile work (Intel's AVX-512 and AMX licences) would otherwise
// be credited with a clock they do not run the kernel at.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/outcome.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/peak_theory.h"  // EngineKind

namespace plumb::platform {

struct PeakPoint {
  int threads = 0;
  double ops_per_s = 0;  // all threads together, best undisturbed repetition
  // Every repetition had a thread preempted by another process (its CPU time < 90% of the
  // wall time): ops_per_s is then only a lower bound. Repetitions are retried before that.
  bool disturbed = false;
  // The core clock with this many threads busy at once with this engine's instructions, timed
  // right after the runs (the slowest thread's; all-core boost is often below one-core boost).
  // The clock of the theoretical peak at this thread count. 0 when not measurable.
  double clock_hz = 0;
};

// One timed sequence of an engine, at its best thread count.
struct SequencePeak {
  std::string isa;
  double ops_per_s = 0;
  int threads = 0;
};

struct InstructionPeak {
  std::string dtype;  // dtype_name()
  EngineKind engine = EngineKind::kVector;
  // Unsupported (with why: "no avx512_bf16 on this CPU") until measured: then ok.
  Outcome outcome{OutcomeState::kUnsupported, ""};
  std::string isa;  // the instruction measured, e.g. "avx512 vfmadd231ps", "amx tdpbf16ps"
  // What one instruction does: lanes x ops per lane (vector), 2 x M x N x K (tile); and the
  // vector width in bits (0 for tiles). The theory is inferred from these (peak_theory.h).
  double ops_per_instruction = 0;
  int instruction_bits = 0;
  std::vector<PeakPoint> by_threads;  // threads = 1..max_threads, empty when unsupported
  double best_ops_per_s = 0;
  int best_threads = 0;
  // Every sequence timed for this engine, the fastest (`isa`) among them; empty when
  // unsupported.
  std::vector<SequencePeak> sequences;
};

// Measures `dtype`'s vector engine (each of its sequences, keeping the fastest: see above) at
// 1..max_threads threads (each pinned to its own allowed CPU, started together behind a
// barrier), spending about `seconds_per_point` per thread count and sequence in a few
// repetitions and keeping the best. ops_per_s = total ops / wall time of the concurrent
// region. max_threads <= 0 means all logical CPUs.
InstructionPeak measure_instruction_peak(Dtype dtype, int max_threads, double seconds_per_point);
// The same, choosing the kernel as if the CPU had only the features set in `cpu` (clear
// avx512f to see what AVX2 code gets, or to test the narrower kernels). Features the CPU lacks
// are ignored, so this can never run an illegal instruction.
InstructionPeak measure_instruction_peak(Dtype dtype, int max_threads, double seconds_per_point,
                                         const CpuFeatures& cpu);

// What the inference of the theoretical peak needs from a measured engine (peak_theory.h): the
// instruction, its op count and width, and the one-thread point's rate and clock (the unloaded
// `fallback_clock_hz` where that point has none). The table's prediction is left empty.
TheoryInput theory_input(const InstructionPeak& peak, double fallback_clock_hz = 0);

// The matrix engine's peak for `dtype` (AMX tiles; bf16 and int8), measured the same way;
// unsupported with the reason where the CPU has no AMX for it or the kernel refuses the tiles.
InstructionPeak measure_matrix_peak(Dtype dtype, int max_threads, double seconds_per_point);

// Every engine of every dtype in `dtypes` (the vector one, and for bf16 and int8 the matrix one,
// supported or not), in that order, measured in rounds: each round runs one repetition of
// every engine at every thread count and each point keeps its best round, so that a
// disturbance lasting a while spoils one repetition of a point rather than all of them.
std::vector<InstructionPeak> measure_engine_peaks(const std::vector<Dtype>& dtypes, int max_threads,
                                                  double seconds_per_point);

// The sequences measure_instruction_peak times for `dtype` on a CPU with the features in `cpu`
// (a pure function of them: a test can pass a feature set of another CPU), empty when
// unsupported, with the reason in `reason`.
std::vector<std::string> vector_sequences(Dtype dtype, const CpuFeatures& cpu,
                                          std::string* reason = nullptr);

// The engine's measurement from its candidate sequences (the same dtype and engine, each
// measured): the fastest supported one, with every supported candidate in `sequences`. The
// first candidate when none is supported.
InstructionPeak fastest_sequence(std::vector<InstructionPeak> candidates);

}  // namespace plumb::platform
