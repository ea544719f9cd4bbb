// The list of reference workloads (see all_workloads.h).
#include "plumb/workloads/all_workloads.h"

#include "plumb/workloads/fathom/alexnet.h"
#include "plumb/workloads/fathom/autoenc.h"
#include "plumb/workloads/fathom/residual.h"
#include "plumb/workloads/fathom/seq2seq.h"
#include "plumb/workloads/fathom/vgg19.h"
#include "plumb/workloads/inference/resnext101.h"
#include "plumb/workloads/paradnn_real/densenet121.h"
#include "plumb/workloads/paradnn_real/mobilenet_v1.h"
#include "plumb/workloads/paradnn_real/squeezenet.h"
#include "plumb/workloads/tbd/resnet50.h"

namespace plumb::workloads {

void register_all_workloads(Registry& registry) {
  registry.add(make_autoenc());
  registry.add(make_seq2seq());
  registry.add(make_residual());
  registry.add(make_vgg19());
  registry.add(make_alexnet());
  registry.add(make_resnet50());
  registry.add(make_densenet121());
  registry.add(make_mobilenet_v1());
  registry.add(make_squeezenet1_0());
  registry.add(make_resnext101_32x4d());
  registry.add(make_resnext101_32x48d());
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
