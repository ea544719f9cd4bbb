// The list of reference workloads (see all_workloads.h).
#include "plumb/workloads/all_workloads.h"

#include "plumb/workloads/fathom/autoenc.h"
#include "plumb/workloads/fathom/seq2seq.h"
#include "plumb/workloads/tbd/resnet50.h"

namespace plumb::workloads {

void register_all_workloads(Registry& registry) {
  registry.add(make_autoenc());
  registry.add(make_seq2seq());
  registry.add(make_resnet50());
}

const Registry& default_registry() {
  static const Registry registry = [] {
    Registry r;
    register_all_workloads(r);
    return r;
  }();
  return registry;
}

}  // namespace plumb::workloads
