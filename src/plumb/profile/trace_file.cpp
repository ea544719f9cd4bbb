// Chrome trace-event JSON of a traced step (see trace_file.h). Times are microseconds from the
// step's start, as the format expects.
#include "plumb/profile/trace_file.h"

#include <set>

namespace plumb::profile {

nlohmann::json chrome_trace(const ProfileResult& result, const std::string& title) {
  constexpr int kPid = 1;
  const auto us = [](double seconds) { return seconds * 1e6; };
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"args", {{"name", title}}}});
  std::set<int> threads = {0};
  for (const auto& e : result.trace) threads.insert(e.thread);
  for (int t : threads)
    events.push_back(
        {{"name", "thread_name"},
         {"ph", "M"},
         {"pid", kPid},
         {"tid", t},
         {"args",
          {{"name", t == 0 ? std::string("step thread") : "thread " + std::to_string(t)}}}});
  events.push_back({{"name", "step"},
                    {"cat", "step"},
                    {"ph", "X"},
                    {"ts", 0.0},
                    {"dur", us(result.trace_step_s)},
                    {"pid", kPid},
                    {"tid", 0},
                    {"args", {{"command", result.command}}}});
  for (const auto& e : result.trace) {
    nlohmann::json args = {{"layer", e.layer}};
    // The signature without the operator's name: its arguments as "Float[1,3,224,224]|i2,2|...".
    const auto bar = e.signature.find('|');
    if (bar != std::string::npos) args["inputs"] = e.signature.substr(bar + 1);
    if (e.kind == "operator") {
      args["flops"] = e.flops;
      args["bytes"] = e.bytes;
    }
    events.push_back({{"name", e.name},
                      {"cat", e.kind},
                      {"ph", "X"},
                      {"ts", us(e.start_s)},
                      {"dur", us(e.duration_s)},
                      {"pid", kPid},
                      {"tid", e.thread},
                      {"args", args}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"tool", "plumb"}, {"command", result.command}, {"started_at", result.started_at}}}};
}

}  // namespace plumb::profile
