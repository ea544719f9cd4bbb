// Theoretical peaks inferred from measured throughput per cycle (see peak_theory.h).
#include "plumb/platform/peak_theory.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace plumb::platform {
namespace {

// "2x512" when the rate is whole instructions per cycle, else the bits per cycle ("256 bits
// per cycle" for a 512-bit instruction every other cycle: 2x128 and 1x256 cannot be told
// apart by throughput).
std::string vector_description(double rate, int instruction_bits) {
  const double bits = rate * instruction_bits;
  if (rate >= 1 && std::abs(rate - std::round(rate)) < 1e-9)
    return fmt::format("{}x{}", static_cast<int>(std::round(rate)), instruction_bits);
  return fmt::format("{} bits per cycle", static_cast<int>(std::round(bits)));
}

std::string matrix_description(double rate) {
  if (rate >= 1) return fmt::format("{} tile instructions per cycle", rate);
  return fmt::format("1 tile instruction per {} cycles", static_cast<int>(std::round(1 / rate)));
}

bool same_rate(double a, double b) {
  return a > 0 && b > 0 && std::abs(a / b - 1) < 1e-6;
}

bool is_fma_dtype(const std::string& dtype) {
  return dtype == "fp32" || dtype == "fp64";
}

}  // namespace

const char* engine_kind_name(EngineKind kind) {
  return kind == EngineKind::kMatrix ? "matrix" : "vector";
}

std::vector<double> valid_issue_rates(EngineKind engine, int instruction_bits) {
  std::vector<double> rates;
  if (engine == EngineKind::kMatrix) {
    for (int k = 6; k >= 0; --k) rates.push_back(1.0 / (1 << k));  // 1/64 .. 1
    return rates;
  }
  if (instruction_bits <= 0) return rates;
  // 1 or 2 units of 128, 256 or 512 bits: 128, 256, 512 or 1024 bits per cycle.
  for (int bits : {128, 256, 512, 1024})
    rates.push_back(static_cast<double>(bits) / instruction_bits);
  return rates;
}

std::string above_theory_line(double measured_fraction, int threads, bool faster_than_any_engine) {
  if (!(measured_fraction > 1 + kAboveTheoryTolerance)) return "";
  return fmt::format(
      "{} measured {:.0f}% of theory: {}",
      threads == 1 ? "one thread" : fmt::format("{} threads", threads), 100 * measured_fraction,
      faster_than_any_engine
          ? "faster than any engine plumb knows, so the op count or the clock is wrong"
          : "the core ran faster than the clock measured beside the kernel (a boost clock, or a "
            "disturbed clock measurement)");
}

std::string shared_core_line(double fraction, double one_thread_fraction, int threads) {
  if (!(one_thread_fraction > 0) || !(fraction < kSharedCoreRatio * one_thread_fraction)) return "";
  return fmt::format(
      "{} threads reached {:.0f}% of theory against one thread's {:.0f}%: the cores were not "
      "all this machine's while they ran (another tenant on a sibling hyperthread, or virtual "
      "CPUs placed on one core's hyperthreads); the figure is what the threads got, not the "
      "engines' peak",
      threads, 100 * fraction, 100 * one_thread_fraction);
}

bool faster_than_any_engine(EngineKind engine, int instruction_bits,
                            double measured_instructions_per_cycle) {
  const std::vector<double> rates = valid_issue_rates(engine, instruction_bits);
  return !rates.empty() && measured_instructions_per_cycle > rates.back() * kRateSlack;
}

InferredTheory infer_theory(const TheoryInput& in) {
  InferredTheory out;
  out.table = in.table_description;
  if (in.measured_ops_per_s <= 0 || in.clock_hz <= 0 || in.ops_per_instruction <= 0) return out;
  const std::vector<double> rates = valid_issue_rates(in.engine, in.instruction_bits);
  if (rates.empty()) return out;
  out.inferred = true;
  out.measured_instructions_per_cycle =
      in.measured_ops_per_s / in.clock_hz / in.ops_per_instruction;
  out.instructions_per_cycle = rates.back();
  for (double r : rates)
    if (out.measured_instructions_per_cycle <= r * kRateSlack) {
      out.instructions_per_cycle = r;
      break;
    }
  out.ops_per_core_cycle = out.instructions_per_cycle * in.ops_per_instruction;
  out.measured_fraction = out.measured_instructions_per_cycle / out.instructions_per_cycle;
  out.description = in.engine == EngineKind::kMatrix
                        ? matrix_description(out.instructions_per_cycle)
                        : vector_description(out.instructions_per_cycle, in.instruction_bits);
  out.agrees_with_table = same_rate(out.instructions_per_cycle, in.table_instructions_per_cycle);

  std::vector<std::string> lines;
  if (in.table_instructions_per_cycle <= 0) {
    lines.push_back(fmt::format(
        "CPU model {} is not in plumb's table for this engine; theory from measured throughput: {}",
        in.cpu_model_text, out.description));
  } else if (!out.agrees_with_table) {
    if (in.engine == EngineKind::kVector && !is_fma_dtype(in.dtype))
      lines.push_back(fmt::format(
          "{}: measured throughput shows {}, not the {} the table's FMA units ({}) would issue",
          in.instruction, out.description,
          vector_description(in.table_instructions_per_cycle, in.instruction_bits),
          in.table_description));
    else
      lines.push_back(fmt::format(
          "CPU reports model {} ({}); measured throughput shows {}; {}", in.cpu_model_text,
          in.table_description, out.description,
          // Faster than the table: only a wrong model explains it. Slower: the core may also
          // have been shared with work the guest cannot see (a VM's sibling hyperthread).
          out.instructions_per_cycle > in.table_instructions_per_cycle
              ? "the hypervisor may mask the model"
              : "the core may have been shared while it ran (another tenant on its sibling "
                "hyperthread), or the hypervisor may mask the model"));
  }
  const std::string above = above_theory_line(
      out.measured_fraction, 1,
      faster_than_any_engine(in.engine, in.instruction_bits, out.measured_instructions_per_cycle));
  if (!above.empty()) lines.push_back(above);
  for (size_t i = 0; i < lines.size(); ++i) out.note += (i > 0 ? "; " : "") + lines[i];
  return out;
}

GemmAgainstRoof gemm_against_roof(const std::string& dtype, double roof_ops_per_s,
                                  const std::string& roof_isa, double gemm_ops_per_s,
                                  const std::string& library, const std::string& implementation) {
  GemmAgainstRoof out;
  if (!(gemm_ops_per_s > 0)) return out;
  const std::string gemm = fmt::format("{} GEMM ({}, {}) reaches {:.1f} G/s", library,
                                       implementation, dtype, gemm_ops_per_s / 1e9);
  if (!(roof_ops_per_s > 0)) {
    out.above = true;
    out.note = fmt::format(
        "{}, and plumb measured no {} roof on this CPU: the roof misses an engine the library "
        "runs",
        gemm, dtype);
    return out;
  }
  out.ratio = gemm_ops_per_s / roof_ops_per_s;
  out.above = out.ratio > 1 + kGemmAboveRoofNoise;
  if (out.above)
    out.note = fmt::format(
        "{}, {:.2f}x the {} roof ({}): the roof misses an engine or a faster sequence the "
        "library runs",
        gemm, out.ratio, dtype, roof_isa);
  return out;
}

double table_vector_rate(const CpuFeatures& cpu, int instruction_bits) {
  const int units = fma_units_per_core(cpu), width = fma_width_bits(cpu);
  if (units <= 0 || width <= 0 || instruction_bits <= 0) return 0;
  return static_cast<double>(units) * std::min(width, instruction_bits) / instruction_bits;
}

double table_matrix_rate(const CpuFeatures& cpu) {
  const int cycles = tile_cycles_per_instruction(cpu);
  return cycles > 0 ? 1.0 / cycles : 0.0;
}

std::string table_vector_description(const CpuFeatures& cpu) {
  if (fma_units_per_core(cpu) <= 0) return "";
  return fmt::format("{}: {}x{} FMA", microarchitecture_name(cpu), fma_units_per_core(cpu),
                     fma_width_bits(cpu));
}

std::string table_matrix_description(const CpuFeatures& cpu) {
  const int cycles = tile_cycles_per_instruction(cpu);
  if (cycles <= 0) return "";
  return fmt::format("{}: AMX, 1 tile instruction per {} cycles", microarchitecture_name(cpu),
                     cycles);
}

}  // namespace plumb::platform
