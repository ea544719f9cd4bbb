// plumb info's reporters (see info_report.h).
#include "plumb/jobs/info_report.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/core/text.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_count;
using report::format_number;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  for (auto d : shape) dims.push_back(std::to_string(d));
  return "[" + join(dims, ", ") + "]";
}

// Facebook Table 1: ops per element of traffic, per compute layer and for the model.
nlohmann::ordered_json intensity_json(const ModelTraffic& t, const analysis::IntensitySummary& s,
                                      int64_t batch) {
  nlohmann::ordered_json j;
  j["batch"] = batch;
  j["element_bytes"] = t.element_bytes;
  j["model_ops_per_weight"] = json_number(s.model_per_weight);
  j["model_ops_per_weight_and_activation"] = json_number(s.model_per_weight_and_activation);
  j["mean_ops_per_weight"] = json_number(s.mean_per_weight);
  j["min_ops_per_weight"] = json_number(s.min_per_weight);
  j["mean_ops_per_weight_and_activation"] = json_number(s.mean_per_weight_and_activation);
  j["min_ops_per_weight_and_activation"] = json_number(s.min_per_weight_and_activation);
  j["layers"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    const auto& in = t.traffic.layers[i];
    j["layers"].push_back(
        {{"name", l.layer},
         {"ops", l.ops},
         {"parameters", t.traffic.parameter_elements[i]},
         {"weight_elements", in.weight_elements},
         {"activation_elements", in.activation_elements},
         {"ops_per_weight", json_number(l.per_weight)},
         {"ops_per_weight_and_activation", json_number(l.per_weight_and_activation)}});
  }
  j["unmatched_layers"] = t.traffic.unmatched;
  return j;
}

void print_intensity(std::ostream& out, const ModelTraffic& t, const analysis::IntensitySummary& s,
                     int64_t batch) {
  out << "\narithmetic intensity (Facebook Table 1; ops per element of traffic, one "
         "inference step at batch "
      << batch << "; BN/activation/pooling fused into the layer before them):\n";
  report::TextTable table(
      {"layer", "GOP", "weights", "activations", "ops/weight", "ops/(weight+act)"});
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    const auto& in = t.traffic.layers[i];
    table.add_row({l.layer, format_number(l.ops / 1e9, 3),
                   format_count(static_cast<long long>(in.weight_elements)),
                   format_count(static_cast<long long>(in.activation_elements)),
                   format_number(l.per_weight, 1), format_number(l.per_weight_and_activation, 1)});
  }
  table.print(out);
  out << fmt::format(
      "model: {} ops/weight (avg.), min {}; {} ops/(weight+activation) (avg.), min {}  "
      "[avg. = total ops / total traffic; unweighted layer means {} and {}]\n",
      format_number(s.model_per_weight, 1), format_number(s.min_per_weight, 1),
      format_number(s.model_per_weight_and_activation, 1),
      format_number(s.min_per_weight_and_activation, 1), format_number(s.mean_per_weight, 1),
      format_number(s.mean_per_weight_and_activation, 1));
  if (!t.traffic.unmatched.empty())
    out << "layers with compute but no parameters of their own (left out): "
        << join(t.traffic.unmatched, ", ") << '\n';
}

nlohmann::ordered_json transformer_json(const TransformerShape& s,
                                        const std::vector<TokenCostRow>& rows) {
  nlohmann::ordered_json j = {
      {"layers", s.layers},       {"d_model", s.d_model},
      {"heads", s.heads},         {"kv_heads", s.kv_heads},
      {"head_dim", s.head_dim},   {"ffn", s.ffn},
      {"vocab", s.vocab},         {"max_positions", s.max_positions},
      {"gated_mlp", s.gated_mlp}, {"tied_embedding", s.tied_embedding},
      {"causal", s.causal},       {"per_token", nlohmann::ordered_json::array()}};
  for (const auto& row : rows)
    j["per_token"].push_back({{"phase", phase_name(row.phase)},
                              {"batch", row.batch},
                              {"tokens", row.tokens},
                              {"context", row.context},
                              {"flops", row.per_token.flops},
                              {"weight_bytes", row.per_token.weight_bytes},
                              {"kv_read_bytes", row.per_token.kv_read_bytes},
                              {"kv_write_bytes", row.per_token.kv_write_bytes},
                              {"bytes", row.per_token.bytes()},
                              {"flops_per_byte", json_number(row.intensity())}});
  return j;
}

// Prefill and decode per token: what a token computes and moves in each phase, and their ratio
// (a decode token at batch 1 reads every weight for two FLOPs per weight: about half a FLOP per
// fp32 byte, far below any CPU's ridge).
void print_token_costs(std::ostream& out, const std::vector<TokenCostRow>& rows) {
  out << "\nper token, counted from the dimensions (fp32 weights and KV cache; docs/llm.md):\n";
  report::TextTable table({"phase", "batch", "new tokens", "context", "GFLOP/token",
                           "weights/token", "KV read/token", "bytes/token", "FLOP/byte"});
  for (const auto& row : rows)
    table.add_row({phase_name(row.phase), std::to_string(row.batch), std::to_string(row.tokens),
                   std::to_string(row.context), format_number(row.per_token.flops / 1e9, 3),
                   report::format_bytes(row.per_token.weight_bytes),
                   report::format_bytes(row.per_token.kv_read_bytes),
                   report::format_bytes(row.per_token.bytes()), format_number(row.intensity(), 2)});
  table.print(out);
}

}  // namespace

nlohmann::ordered_json info_json(const InfoJobResult& r) {
  const WorkloadInfo& info = r.workload->info;
  nlohmann::ordered_json out;
  out["name"] = info.name;
  out["suites"] = info.suites;
  out["domain"] = info.domain;
  out["description"] = info.description;
  out["source"] = info.source;
  out["throughput_unit"] = info.throughput_unit;
  out["params"] = r.params;
  out["forward_macs"] = r.forward.macs;
  out["forward_flops"] = r.forward.flops;
  out["config"] = r.config.to_json();
  out["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : r.layers)
    out["layers"].push_back({{"name", l.record.name},
                             {"type", l.type},
                             {"params", l.params},
                             {"output_shape", l.record.output_shape},
                             {"calls", l.record.calls}});
  if (r.traffic) out["intensity"] = intensity_json(*r.traffic, *r.summary, r.intensity_batch);
  if (r.shape) out["transformer"] = transformer_json(*r.shape, r.token_costs);
  if (!r.layers_skipped.empty()) out["layers_skipped"] = r.layers_skipped;
  return out;
}

void print_info(std::ostream& out, const InfoJobResult& r) {
  const WorkloadInfo& info = r.workload->info;
  out << info.name << ": " << info.description << "\n"
      << "source: " << info.source << "\n"
      << "suites: " << join(info.suites, ", ") << "; domain: " << info.domain
      << "; throughput unit: " << info.throughput_unit << "\n"
      << "trainable parameters: " << format_count(r.params) << "\n";
  if (r.layers_skipped.empty())
    out << "forward pass of one example: " << format_number(r.forward.macs / 1e9, 3)
        << " GMACs (convolution, linear, "
        << "matrix products), " << format_number(r.forward.flops / 1e9, 3)
        << " GFLOPs (all costed operators)\n";
  out << "\n";
  report::TextTable cfg({"config", "value", "meaning"});
  for (const auto& e : r.config.entries()) cfg.add_row({e.key, Config::value_text(e.value), e.doc});
  cfg.print(out);
  if (!r.token_costs.empty()) print_token_costs(out, r.token_costs);
  if (!r.layers_skipped.empty()) {
    out << "\nlayers: not traced, the model was not built: " << r.layers_skipped << "\n";
    return;
  }
  out << "\nlayers (one inference step at batch 1; calls > 1 for recurrent steps):\n";
  report::TextTable table({"layer", "type", "params", "output shape", "calls"});
  for (const auto& l : r.layers)
    table.add_row({l.record.name, l.type, format_count(l.params), shape_text(l.record.output_shape),
                   std::to_string(l.record.calls)});
  table.print(out);
  if (r.traffic) print_intensity(out, *r.traffic, *r.summary, r.intensity_batch);
}

}  // namespace plumb::jobs
