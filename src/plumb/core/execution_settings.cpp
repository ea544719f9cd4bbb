// Names and parsing of the execution settings (see execution_settings.h).
#include "plumb/core/execution_settings.h"

#include "plumb/core/errors.h"

namespace plumb {

const char* engine_name(Engine engine) {
  return engine == Engine::kNative ? "native" : "onednn";
}

const char* heap_policy_name(HeapPolicy heap) {
  return heap == HeapPolicy::kReturn ? "return" : "keep";
}

Engine parse_engine(const std::string& text) {
  if (text == "onednn") return Engine::kOnednn;
  if (text == "native") return Engine::kNative;
  throw UsageError("unknown engine '" + text + "'; valid: onednn, native");
}

HeapPolicy parse_heap_policy(const std::string& text) {
  if (text == "keep") return HeapPolicy::kKeep;
  if (text == "return") return HeapPolicy::kReturn;
  throw UsageError("unknown heap policy '" + text + "'; valid: keep, return");
}

}  // namespace plumb
