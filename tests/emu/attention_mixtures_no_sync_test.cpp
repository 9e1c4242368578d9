// MoA's head routing and MAE's gates on a GPU make no device-to-host copy and never wait for the device
// (counted by the CUDA emulator: moe_emu::host_traffic), with a padding mask on the device as a training
// batch brings it: the router, the sort by expert, the grouped GEMMs of the expert maps, the aux losses
// normalised by the real queries, MAE's masked mean gate input with its batch norm, the G step's mixture
// and the F step's drawn expert, forward and backward, with the CPU's outputs. So a training update of
// either family can be captured in a CUDA graph, as an MoE layer's can (tests/emu/moe_no_sync_test.cpp).
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

#include "graph/expr/binary.h"
#include "graph/expr/reduce.h"
#include "layers/builder.h"
#include "layers/mae.h"
#include "layers/moa.h"
#include "moe_emu/control.h"
#include "support/parity.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

namespace {
constexpr int64_t B = 2, T = 6, D = 16;

enum class Site { moa, mae_g_step, mae_f_step };

/// The site's training graph on x (queries and keys; padding marks real tokens): its output dotted
/// with a fixed seed, plus its aux losses, differentiated; with `check`, without host traffic on a GPU.
/// Returns the output.
std::vector<double> train_step(ParameterStore& store, Site site, const Tensor& x, const Tensor& padding, uint64_t step,
                               bool check) {
  Graph g(x.device(), &store, GraphOptions{.training = true, .compute_dtype = DType::f32, .seed = 3, .step = step});
  Builder b(g, "site");
  const AttentionInput in{g.input(x), g.input(x), padding, false, true, nullptr, padding};
  Expr out;
  if (site == Site::moa) {
    out = moa_attention_layer(b, in, D, MoaOptions::from_yaml(YAML::Load("{type: moa, name: 2K4E8D}"), 4));
  } else {
    b.context().experts = site == Site::mae_g_step ? ExpertChoice::mixture : ExpertChoice::sample;
    out = mae_attention_layer(b, in, D, MaeOptions::from_yaml(YAML::Load("{type: mae, name: MAE-3}"), 4),
                              SiteRole::encoder_self);
  }
  Expr total = sum_all(out * g.input(Tensor::from_vector(test::random_tensor(out.shape(), 5).to_vector<float>(),
                                                         out.shape(), x.device())));
  for (const AuxLoss& a : b.aux_losses()) total = total + a.value;
  if (x.device().is_cuda()) cuda::synchronize(x.device().index);  // the seed's upload above is the test's
  const moe_emu::HostTraffic before = moe_emu::host_traffic();
  g.forward();
  store.zero_grads();
  g.backward(total);
  const moe_emu::HostTraffic now = moe_emu::host_traffic();
  const uint64_t copies = now.copies_to_host - before.copies_to_host, waits = now.host_waits - before.host_waits;
  INFO(copies << " copies to the host, " << waits << " host waits");
  if (check) {
    CHECK(copies == 0);
    CHECK(waits == 0);
  }
  return out.val().to_vector<double>();
}
}  // namespace

TEST_CASE("MoA and MAE sites' forward and backward make no copy to the host and no host wait",
          "[emu][moa][mae][no_sync]") {
  const Device gpu = Device::cuda(0);
  const Tensor x = Tensor::from_vector(test::random_tensor(Shape{B, T, D}, 1).to_vector<float>(), Shape{B, T, D}, gpu);
  const Tensor padding =
      Tensor::from_vector(std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, Shape{B, T}, gpu);
  for (Site site : {Site::moa, Site::mae_g_step, Site::mae_f_step}) {
    INFO((site == Site::moa ? "MoA 2K4E8D" : site == Site::mae_g_step ? "MAE-3, G step" : "MAE-3, F step"));
    ParameterStore store(gpu, 7);
    train_step(store, site, x, padding, 0, false);  // the first step creates (uploads) the parameters
    const std::vector<double> got = train_step(store, site, x, padding, 1, true);
    // ... and computes what the CPU computes, the mask turned into weights on each device.
    ParameterStore cpu_store(Device::cpu(), 7);
    train_step(cpu_store, site, x.to(Device::cpu()), padding.to(Device::cpu()), 0, false);
    const std::vector<double> want = train_step(cpu_store, site, x.to(Device::cpu()), padding.to(Device::cpu()), 1, false);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-4));
  }
}
