// A GPU step's time on the device clock, from operator intervals (see device_timeline.h).
#include "plumb/profile/device_timeline.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "plumb/profile/op_category.h"

namespace plumb::profile {
namespace {

struct DeviceSpan {
  double start = 0, end = 0;
};

// `spans` sorted and merged where they touch or overlap; empty spans dropped.
std::vector<DeviceSpan> merged_spans(std::vector<DeviceSpan> spans) {
  spans.erase(std::remove_if(spans.begin(), spans.end(),
                             [](const DeviceSpan& s) { return !(s.end > s.start); }),
              spans.end());
  std::sort(spans.begin(), spans.end(),
            [](const DeviceSpan& a, const DeviceSpan& b) { return a.start < b.start; });
  std::vector<DeviceSpan> out;
  for (const DeviceSpan& s : spans) {
    if (!out.empty() && s.start <= out.back().end)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
  }
  return out;
}

double spans_length(const std::vector<DeviceSpan>& spans) {
  double total = 0;
  for (const DeviceSpan& s : spans) total += s.end - s.start;
  return total;
}

// How much of [from, to] the merged `spans` cover.
double spans_cover(const std::vector<DeviceSpan>& spans, double from, double to) {
  double total = 0;
  for (const DeviceSpan& s : spans)
    total += std::max(0.0, std::min(to, s.end) - std::max(from, s.start));
  return total;
}

DeviceSpan clipped_span(double start, double end, double low, double high) {
  return {std::max(start, low), std::min(end, high)};
}

}  // namespace

DeviceWork device_work_of(const std::string& op_name, bool crosses_devices) {
  if (crosses_devices) return DeviceWork::kTransfer;
  // Reading a device value on the host waits for every kernel queued before it; so does an
  // operator whose output's size depends on its input's values (it reads the count back).
  static const char* const kReadsBack[] = {"aten::_local_scalar_dense", "aten::item",
                                           "aten::is_nonzero", "aten::equal"};
  const bool reads_back = std::any_of(std::begin(kReadsBack), std::end(kReadsBack),
                                      [&](const char* name) { return op_name == name; });
  return reads_back || output_shape_depends_on_values(op_name.c_str())
             ? DeviceWork::kSynchronization
             : DeviceWork::kCompute;
}

DeviceStepBreakdown device_step_breakdown(double step_start_s, double step_end_s,
                                          const std::vector<DeviceOpInterval>& ops) {
  if (!(step_end_s >= step_start_s))
    throw std::invalid_argument("device_step_breakdown: the step ends before it starts");
  DeviceStepBreakdown b;
  b.step_s = step_end_s - step_start_s;
  b.op_device_s.assign(ops.size(), 0.0);
  std::vector<DeviceSpan> busy, compute, synchronizing, copying;
  // (device start, launched) of each operator's work in the step, to find what ends each gap:
  // launched when its host call returned, every kernel of it queued by then.
  std::vector<std::pair<double, double>> starts;
  for (size_t i = 0; i < ops.size(); ++i) {
    const DeviceOpInterval& op = ops[i];
    const DeviceSpan host = clipped_span(op.host_start_s, op.host_end_s, step_start_s, step_end_s);
    if (op.work == DeviceWork::kSynchronization) synchronizing.push_back(host);
    if (op.work == DeviceWork::kTransfer) copying.push_back(host);
    if (!op.on_device()) continue;
    const DeviceSpan device =
        clipped_span(op.device_start_s, op.device_end_s, step_start_s, step_end_s);
    if (!(device.end > device.start)) continue;
    b.op_device_s[i] = device.end - device.start;
    b.op_device_sum_s += b.op_device_s[i];
    busy.push_back(device);
    if (op.work != DeviceWork::kTransfer) compute.push_back(device);
    starts.emplace_back(device.start, op.host_end_s);
  }
  busy = merged_spans(std::move(busy));
  synchronizing = merged_spans(std::move(synchronizing));
  copying = merged_spans(std::move(copying));
  b.busy_s = spans_length(busy);
  b.compute_s = spans_length(merged_spans(std::move(compute)));
  b.transfer_s = b.busy_s - b.compute_s;
  std::sort(starts.begin(), starts.end());

  // Each idle gap [from, to]: until the work that ends it was launched, the device waited for
  // the host (what the host was doing says why); after that, for the launch itself.
  const auto charge_gap = [&](double from, double to) {
    if (!(to > from)) return;
    double launched = to;  // the last gap waits for the step's end
    const auto next = std::lower_bound(starts.begin(), starts.end(), std::pair{to, -1e300});
    if (next != starts.end()) launched = std::clamp(next->second, from, to);
    const double waiting = launched - from;
    const double synchronization = std::min(waiting, spans_cover(synchronizing, from, launched));
    const double data_movement =
        std::min(waiting - synchronization, spans_cover(copying, from, launched));
    b.idle_synchronization_s += synchronization;
    b.idle_data_movement_s += data_movement;
    b.idle_host_bound_s += waiting - synchronization - data_movement;
    b.idle_launch_s += to - launched;
  };
  double cursor = step_start_s;
  for (const DeviceSpan& s : busy) {
    charge_gap(cursor, s.start);
    cursor = s.end;
  }
  charge_gap(cursor, step_end_s);
  return b;
}

double dtype_utilization(double flops, double step_s, double peak_flops_per_s) {
  return step_s > 0 && peak_flops_per_s > 0 ? flops / step_s / peak_flops_per_s : 0;
}

double cpu_utilization(double process_cpu_s, double step_s, int cores) {
  return step_s > 0 && cores > 0 ? process_cpu_s / (step_s * cores) : 0;
}

StepUtilization step_utilization(const DeviceStepBreakdown& step, double flops,
                                 double peak_flops_per_s, double process_cpu_s, int cores) {
  return {step.utilization(), dtype_utilization(flops, step.step_s, peak_flops_per_s),
          cpu_utilization(process_cpu_s, step.step_s, cores)};
}

}  // namespace plumb::profile
