// The list of reference workloads (see all_workloads.h), in suite order: Fathom, TBD, ParaDnn's
// real models, the Facebook inference study, the language models, ParaDnn's generated models. A
// workload in several suites is listed once.
#include "plumb/workloads/all_workloads.h"

#include "plumb/workloads/fathom/alexnet.h"
#include "plumb/workloads/fathom/autoenc.h"
#include "plumb/workloads/fathom/deepq.h"
#include "plumb/workloads/fathom/memnet.h"
#include "plumb/workloads/fathom/residual.h"
#include "plumb/workloads/fathom/seq2seq.h"
#include "plumb/workloads/fathom/speech.h"
#include "plumb/workloads/fathom/vgg19.h"
#include "plumb/workloads/inference/dlrm.h"
#include "plumb/workloads/inference/faster_rcnn_shufflenet.h"
#include "plumb/workloads/inference/resnext101.h"
#include "plumb/workloads/inference/resnext3d.h"
#include "plumb/workloads/inference/seq2seq_gru.h"
#include "plumb/workloads/llm/bert.h"
#include "plumb/workloads/llm/gpt2.h"
#include "plumb/workloads/llm/llama.h"
#include "plumb/workloads/paradnn/paradnn_cnn.h"
#include "plumb/workloads/paradnn/paradnn_fc.h"
#include "plumb/workloads/paradnn/paradnn_rnn.h"
#include "plumb/workloads/paradnn/paradnn_transformer.h"
#include "plumb/workloads/paradnn_real/densenet121.h"
#include "plumb/workloads/paradnn_real/mobilenet_v1.h"
#include "plumb/workloads/paradnn_real/retinanet.h"
#include "plumb/workloads/paradnn_real/squeezenet.h"
#include "plumb/workloads/tbd/a3c.h"
#include "plumb/workloads/tbd/deepspeech2.h"
#include "plumb/workloads/tbd/faster_rcnn.h"
#include "plumb/workloads/tbd/gnmt.h"
#include "plumb/workloads/tbd/inception_v3.h"
#include "plumb/workloads/tbd/resnet50.h"
#include "plumb/workloads/tbd/transformer.h"
#include "plumb/workloads/tbd/wgan_gp.h"

namespace plumb::workloads {

void register_all_workloads(Registry& registry) {
  // fathom
  registry.add(make_autoenc());
  registry.add(make_seq2seq());
  registry.add(make_memnet());
  registry.add(make_speech());
  registry.add(make_residual());
  registry.add(make_vgg19());
  registry.add(make_alexnet());
  registry.add(make_deepq());
  // tbd
  registry.add(make_resnet50());
  registry.add(make_inception_v3());
  registry.add(make_gnmt());
  registry.add(make_transformer());
  registry.add(make_faster_rcnn());
  registry.add(make_deepspeech2());
  registry.add(make_wgan_gp());
  registry.add(make_a3c());
  // paradnn-real
  registry.add(make_retinanet());
  registry.add(make_densenet121());
  registry.add(make_mobilenet_v1());
  registry.add(make_squeezenet1_0());
  // inference
  registry.add(make_dlrm());
  registry.add(make_resnext101_32x4d());
  registry.add(make_resnext101_32x48d());
  registry.add(make_faster_rcnn_shufflenet());
  registry.add(make_resnext3d());
  registry.add(make_seq2seq_gru());
  // llm: generative language models (prefill + KV-cache decode) and BERT
  registry.add(make_gpt2());
  registry.add(make_llama());
  registry.add(make_bert());
  // paradnn: the generated models, whose hyperparameters are config keys (sweeps)
  registry.add(make_paradnn_fc());
  registry.add(make_paradnn_cnn());
  registry.add(make_paradnn_rnn());
  registry.add(make_paradnn_transformer());
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
