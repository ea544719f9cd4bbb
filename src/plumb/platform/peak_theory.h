// The theoretical peak of a compute engine, inferred from what one core measurably retires per
// cycle instead of trusted from the CPU model number. A hypervisor may report any model (a
// Xeon with AMX was seen reporting 0xA7, Rocket Lake, whose table entry has one 512-bit FMA
// unit where the real core has two), so the table of known cores (cpu_features.h) is only a
// cross-check: where it and the measurement disagree, the measurement wins and one line says so.
//
// The inference: measured instructions per core cycle (one thread, at the clock measured while
// the same kind of instruction kept the core busy) is rounded UP to the nearest issue rate a
// real engine can have, allowing kRateSlack for clock-measurement error: a 2 x 512-bit core
// measured at 1.4 zmm FMAs per cycle is a 2 x 512-bit core running below peak, not a 1 x 512 one
// running above it. Valid rates: vector engines move 128..1024 bits per cycle (1 or 2 units of
// 128, 256 or 512 bits); a matrix engine retires one tile instruction every 2^k cycles.
// Pure functions: the probe supplies the measurements.
#pragma once

#include <string>
#include <vector>

#include "plumb/platform/cpu_features.h"

namespace plumb::platform {

enum class EngineKind { kVector, kMatrix };
const char* engine_kind_name(EngineKind kind);  // "vector", "matrix"

// A measurement above a valid rate by up to this factor is taken as clock-measurement error
// (the clock is measured beside the kernel, not during it) rather than a faster engine.
inline constexpr double kRateSlack = 1.2;
// Measured above theory by more than this fraction is always explained in the note.
inline constexpr double kAboveTheoryTolerance = 0.05;

struct TheoryInput {
  EngineKind engine = EngineKind::kVector;
  std::string dtype;               // "fp32", ...
  std::string instruction;         // "avx512 vfmadd231ps"
  int instruction_bits = 0;        // vector width of one instruction (128/256/512); 0 for tiles
  double ops_per_instruction = 0;  // lanes x ops per lane, or 2 x M x N x K for a tile product
  double measured_ops_per_s = 0;   // one thread on one core
  double clock_hz = 0;             // the core clock while that thread ran
  // The table's prediction for this instruction (instructions per cycle per core, 0 = the
  // table does not know this core or engine) and how the table describes the core.
  double table_instructions_per_cycle = 0;
  std::string table_description;  // "rocketlake: 1x512 FMA", "sapphirerapids AMX"
  std::string cpu_model_text;     // "0xA7", for the cross-check line
};

struct InferredTheory {
  bool inferred = false;  // false: nothing measured (or no clock); every number below is 0
  double measured_instructions_per_cycle = 0;
  double instructions_per_cycle = 0;  // the valid rate the measurement rounds up to
  double ops_per_core_cycle = 0;      // instructions_per_cycle x ops_per_instruction
  // "2x512" for vector engines (units x bits, or bits per cycle where that is ambiguous), "1
  // tile instruction per 16 cycles" for a matrix engine.
  std::string description;
  std::string table;  // table_description, "" when unknown
  bool agrees_with_table = false;
  double measured_fraction = 0;  // measured / inferred theory at the same clock
  // One line for the user, "" when the table agrees and the measurement is not above theory.
  std::string note;
};

// The valid issue rates for an engine, ascending (instructions per cycle per core).
std::vector<double> valid_issue_rates(EngineKind engine, int instruction_bits);

// Whether a measured rate (instructions per cycle per core) is beyond every valid issue rate of
// the engine, kRateSlack allowed: then the op count or the clock is wrong, not the theory.
bool faster_than_any_engine(EngineKind engine, int instruction_bits,
                            double measured_instructions_per_cycle);

// The line that explains a measurement more than kAboveTheoryTolerance above its theory ("" when
// it is not): `threads` is the thread count of the point, and `faster_than_any_engine` says the
// measured rate is beyond every valid issue rate (then the op count or the clock is wrong).
std::string above_theory_line(double measured_fraction, int threads, bool faster_than_any_engine);

// A register-resident kernel on N distinct cores runs each core as fast as one thread does:
// a point below kSharedCoreRatio of the one-thread fraction of theory lost part of its cores
// to something the guest cannot see. The line that says so ("" when it did not).
inline constexpr double kSharedCoreRatio = 0.8;
std::string shared_core_line(double fraction, double one_thread_fraction, int threads);

InferredTheory infer_theory(const TheoryInput& input);

// A library GEMM measured above the roof by up to this fraction is noise between two
// measurements of one roof (the probe's points vary by a few percent on a shared VM), not a
// faster engine: oneDNN's AMX GEMMs ran 8x above the vector peak.
inline constexpr double kGemmAboveRoofNoise = 0.05;

struct GemmAgainstRoof {
  bool above = false;  // more than kGemmAboveRoofNoise above the roof
  double ratio = 0;    // GEMM / roof; 0 when no roof was measured
  std::string note;    // the line that says so when above, else ""
};

// The probe's rule for the best library GEMM of a dtype against the dtype's roof (its fastest
// engine's sequence `roof_isa`; `roof_ops_per_s` 0 when none was measured): a GEMM more than
// kGemmAboveRoofNoise above it means the roof is wrong (it misses an engine or a faster
// sequence the library runs, or miscounts), never that the library beat the machine; so it is
// flagged and said, and the roof is not raised to the GEMM, which is not a peak.
GemmAgainstRoof gemm_against_roof(const std::string& dtype, double roof_ops_per_s,
                                  const std::string& roof_isa, double gemm_ops_per_s,
                                  const std::string& library, const std::string& implementation);

// The table's instructions per cycle for a vector instruction of `instruction_bits` on `cpu`
// (FMA units x min(unit width, bits) / bits; 0 when the table does not know the core), and for
// a tile instruction (AMX cores in the table: one per 16 cycles; 0 otherwise).
double table_vector_rate(const CpuFeatures& cpu, int instruction_bits);
double table_matrix_rate(const CpuFeatures& cpu);
// "rocketlake: 1x512 FMA"; "" when the table does not know the core.
std::string table_vector_description(const CpuFeatures& cpu);
std::string table_matrix_description(const CpuFeatures& cpu);

}  // namespace plumb::platform
