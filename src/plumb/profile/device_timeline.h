// Where a GPU step's time goes on the device clock (TBD's GPU utilisation, HTA's idle-time
// breakdown): from each outermost operator's host interval (its launch, on the host clock) and
// device interval (its work on the device, from CUDA events recorded on its stream, moved onto
// the host clock), the step's device-busy time, each operator's device time, and the step's
// device idle time split by its cause. Pure arithmetic on intervals, so it is tested on the CPU
// with synthetic timings; the CUDA observer supplies real ones.
#pragma once

#include <string>
#include <vector>

namespace plumb::profile {

// What an operator makes the device (or the host) do, beyond computing.
enum class DeviceWork {
  kCompute,          // kernels on the device
  kTransfer,         // a copy between host and device memory
  kSynchronization,  // the host waits for the device to drain (.item(), a copy to the host)
};

// The kind of an operator of that name. `crosses_devices`: its input and output live on
// different devices (an aten::copy_ or aten::_to_copy between host and GPU).
DeviceWork device_work_of(const std::string& op_name, bool crosses_devices);

// One outermost operator of a step. Times in seconds on one clock (the host's); an operator
// that put no work on the device has device_end_s <= device_start_s.
struct DeviceOpInterval {
  std::string name;
  DeviceWork work = DeviceWork::kCompute;
  double host_start_s = 0, host_end_s = 0;      // the call on the host (its launch)
  double device_start_s = 0, device_end_s = 0;  // its work on the device
  bool on_device() const { return device_end_s > device_start_s; }
};

// One step on the device clock. The parts partition the step: compute_s + transfer_s +
// idle_host_bound_s + idle_synchronization_s + idle_data_movement_s + idle_launch_s = step_s.
struct DeviceStepBreakdown {
  double step_s = 0;
  double busy_s = 0;                  // union of the operators' device intervals in the step
  double compute_s = 0;               // busy with compute (other streams' copies overlap it)
  double transfer_s = 0;              // busy with copies and nothing else: exposed transfer
  double idle_host_bound_s = 0;       // idle, the next work not launched: the host was busy
  double idle_synchronization_s = 0;  // idle while the host waited in a synchronising call
  double idle_data_movement_s = 0;    // idle while the host ran a copy (pageable memory)
  double idle_launch_s = 0;           // idle though the next work was launched (queue, latency)
  std::vector<double> op_device_s;    // per operator (input order): its device time in the step
  double op_device_sum_s = 0;         // their sum; equals busy_s when no two overlap

  // TBD's GPU compute utilisation: device-busy time over the step's wall time.
  double utilization() const { return step_s > 0 ? busy_s / step_s : 0; }
};

// The breakdown of the step [step_start_s, step_end_s]: every interval is clipped to it. The
// idle time before an operator's work is charged to what the host did between the device going
// idle and that operator's launch, taken as the end of its host call (a synchronising call, a
// copy, else its own work: host-bound); from its launch to its start, to the launch
// (idle_launch_s). Idle time after the last work is the host's until the step ends.
DeviceStepBreakdown device_step_breakdown(double step_start_s, double step_end_s,
                                          const std::vector<DeviceOpInterval>& ops);

// TBD's FP32 utilisation (or the dtype's): achieved FLOP/s over the device's peak for the dtype.
double dtype_utilization(double flops, double step_s, double peak_flops_per_s);

// TBD's CPU utilisation of a step: the CPU time the host process used during it (every
// thread's, run::process_cpu_seconds before and after) over what `cores` cores could give in
// the step's wall time. A host that launches kernels from one thread of 16 cores shows 1/16
// busy-waiting at most; a data pipeline on the other cores raises it.
double cpu_utilization(double process_cpu_s, double step_s, int cores);

// TBD's three utilisations of one GPU step together.
struct StepUtilization {
  double gpu_compute = 0;  // device-busy time / step time
  double dtype = 0;        // achieved FLOP/s / the GPU's GEMM peak for the step's dtype
  double cpu = 0;          // host process CPU time / (cores x step time)
};
StepUtilization step_utilization(const DeviceStepBreakdown& step, double flops,
                                 double peak_flops_per_s, double process_cpu_s, int cores);

}  // namespace plumb::profile
