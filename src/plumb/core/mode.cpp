// Parsing of the train/infer mode.
#include "plumb/core/mode.h"

#include "plumb/core/errors.h"

namespace plumb {

Mode parse_mode(const std::string& text) {
  if (text == "train") return Mode::kTrain;
  if (text == "infer") return Mode::kInfer;
  throw UsageError("mode must be 'train' or 'infer', got '" + text + "'");
}

}  // namespace plumb
