// A traced step as a Chrome trace-event file (the JSON format Perfetto and chrome://tracing
// open): one complete ("X") event per operator call, autograd node and layer scope, on the
// thread that ran it, with the layer, input shapes, FLOPs and bytes as arguments, and one
// event for the whole step.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plumb/profile/profiler.h"

namespace plumb::profile {

// `title` names the process row ("resnet50 infer batch 1, 1 thread"). The result carries a
// trace only when profile_workload was asked for one.
nlohmann::json chrome_trace(const ProfileResult& result, const std::string& title);

}  // namespace plumb::profile
