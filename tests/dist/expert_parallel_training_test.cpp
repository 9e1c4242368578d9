// moe-train's Trainer with experts spread over the ranks: a 1B-word-style LSTM LM with an MoE layer
// between its LSTMs, and the sparsely-gated MoE paper's LSTM encoder-decoder (lstm_seq2seq) with MoE
// layers in its encoder and decoder (4 experts, experts_per_rank 4/N, global balancing, noise off so
// that gating is a function of the tokens alone), 10 updates with N ranks and batch B/N versus one
// process with batch B. Both runs' last and best checkpoints are in the single-process layout (every
// expert, gathered by rank 0) and must agree (max |difference| < 1e-4, mean < 1e-6: summation order only); the run then
// resumes from its checkpoint for 2 more updates. Run by ctest with 1, 2 and 4 processes.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>

#include "dist_test_util.h"
#include "tensor/safetensors.h"
#include "training/trainer.h"
#include "training/training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;
using moe::test::comm;

namespace {
/// Trains `o` (its data written by rank 0 with write(dir)) with N ranks and batch B/N and with one
/// process and batch B, compares the checkpoints and curves, and resumes for 2 more updates.
void check_expert_parallel(const std::string& what, const std::function<TrainOptions(const std::string&)>& options,
                           const std::function<void(const std::string&)>& write) {
  dist::Communicator& c = comm();
  const int n = c.world();
  Tensor pid = Tensor::from_vector(std::vector<int64_t>{static_cast<int64_t>(::getpid())}, Shape{1});
  c.broadcast(pid, 0);
  const std::string dir =
      (fs::temp_directory_path() / ("moe-dist-ep-" + std::to_string(pid.to_vector<int64_t>()[0]))).string();
  if (c.rank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    write(dir);
  }
  c.barrier();
  TrainOptions o = options(dir);
  o.max_updates = 10;
  o.schedule.max_updates = 10;
  o.save_every = 0;
  o.valid_every = 5;  // validation runs expert-parallel too (inference graphs)
  o.dist.timeout = 60;
  const int64_t global_batch = o.max_tokens;
  if (c.rank() == 0) {
    TrainOptions one = o;
    one.run_dir = dir + "/one";
    auto local = dist::make_local_communicator();
    Trainer t(one);
    t.set_communicator(local.get());
    t.run(false);
  }
  c.barrier();
  o.max_tokens = global_batch / n;
  o.run_dir = dir + "/ep";
  {
    Trainer t(o);
    t.set_communicator(&c);
    t.run(false);
  }
  // checkpoint.last and checkpoint.best (validation every 5 updates) each hold every expert.
  for (const std::string file : {"/checkpoint.last.safetensors", "/checkpoint.best.safetensors"}) {
    if (c.rank() != 0) break;
    INFO(file);
    const SafetensorsFile ours = load_safetensors(o.run_dir + file);
    const SafetensorsFile theirs = load_safetensors(dir + "/one" + file);
    double max_diff = 0, sum_diff = 0;
    int64_t count = 0;
    bool saw_experts = false;
    for (const auto& [name, t] : theirs.tensors) {
      if (name.rfind("vocab.", 0) == 0) continue;
      INFO(name);
      const Tensor& mine = ours.get(name);
      REQUIRE(mine.shape() == t.shape());  // the experts gathered into the single-process shapes
      saw_experts = saw_experts || name.find("expert.w") != std::string::npos;
      const auto a = mine.to_vector<float>(), b = t.to_vector<float>();
      for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - double(b[i]));
        max_diff = std::max(max_diff, d);
        sum_diff += d;
        ++count;
      }
    }
    CHECK(saw_experts);
    WARN("dist: " << what << ", " << n << " ranks, " << 4 / n
                  << " experts per rank: |parameter difference| vs one "
                     "process: max "
                  << max_diff << ", mean " << sum_diff / double(count));
    CHECK(max_diff < 1e-4);  // measured 1.8e-7 (2 ranks) and 2.4e-7 (4 ranks)
    CHECK(sum_diff / double(count) < 1e-6);
  }
  if (c.rank() == 0) {
    const auto curve = test::read_metrics(o.run_dir), ref = test::read_metrics(dir + "/one");
    REQUIRE(curve.size() == ref.size());
    for (size_t i = 0; i < curve.size(); ++i) CHECK(curve[i].loss == Approx(ref[i].loss).epsilon(1e-4));
  }
  // Every rank resumes from the gathered checkpoint (its own experts sliced back out).
  o.max_updates = 12;
  {
    Trainer t(o);
    t.set_communicator(&c);
    t.run(true);
    CHECK(t.state().update == 12);
  }
  c.barrier();
  if (c.rank() == 0) fs::remove_all(dir);
}

/// The MoE layer of both models: 4 experts, top-2, no noise, balancing weight `w`, 4/N experts per rank.
std::string moe_map(int ranks, double w) {
  return "{type: moe, experts: 4, k: 2, hidden: 16, noisy: false, w_importance: " + std::to_string(w) +
         ", w_load: " + std::to_string(w) + ", experts_per_rank: " + std::to_string(4 / ranks) + "}";
}
}  // namespace

TEST_CASE("dist: an LSTM-MoE LM trains with its experts spread over the ranks like one process",
          "[dist][expert_parallel][training]") {
  const int n = comm().world();
  if (4 % n != 0) return;  // 4 experts over N ranks
  check_expert_parallel(
      "LSTM-MoE LM",
      [n](const std::string& dir) {
        TrainOptions o = test::tiny_lm_options(dir);
        o.model = YAML::Load(
            "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 2, dropout: 0.0, moe_after: [0], moe: " +
            moe_map(n, 0.1) + "}");
        return o;
      },
      [](const std::string& dir) { test::write_lm_texts(dir, 300, 30, 5); });
}

TEST_CASE("dist: an lstm_seq2seq with MoE layers trains expert-parallel like one process",
          "[dist][expert_parallel][training][seq2seq]") {
  const int n = comm().world();
  if (4 % n != 0) return;
  check_expert_parallel(
      "lstm_seq2seq",
      [n](const std::string& dir) {
        TrainOptions o = test::tiny_options(dir);
        o.model = YAML::Load(
            "{type: lstm_seq2seq, d_model: 16, hidden: 16, enc_layers: 2, dec_layers: 2, dropout: 0.0, "
            "max_positions: 64, moe: " +
            moe_map(n, 0.01) + "}");
        return o;
      },
      [](const std::string& dir) { test::write_corpora(dir, 200, 20, 5); });
}
