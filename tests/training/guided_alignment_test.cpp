// Guided-alignment training (lib/training/guided_alignment.h): the ce and mse costs equal their formulas written
// out here, and their gradients with respect to the attention are the formulas' derivatives; moe-train with
// data.train.alignment steers the alignment head: on the reversal corpus, guided to the reversal links the head finds
// them far more often than an unguided head does, guided to the source's first token it attends there, which an
// unguided head does not.
#include "training/guided_alignment.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "graph/expr/reduce.h"
#include "models/checkpoint.h"
#include "training_test_util.h"
#include "translator/pair_alignment.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
Tensor tensor(const std::vector<float>& v, const Shape& shape) { return Tensor::from_vector(v, shape); }
}  // namespace

TEST_CASE("guided alignment: the costs and their gradients", "[training][alignment]") {
  // B = 1, T = 3, S = 2: row 0 linked to source 1, row 1 split 1:3, row 2 unlinked.
  const std::vector<float> a = {0.3f, 0.7f, 0.6f, 0.4f, 0.9f, 0.1f}, g = {0.f, 1.f, 0.25f, 0.75f, 0.f, 0.f};
  for (GuidedAlignmentCost kind : {GuidedAlignmentCost::ce, GuidedAlignmentCost::mse}) {
    INFO(enum_name(kind));
    Graph graph(Device::cpu(), nullptr, GraphOptions{.training = true});
    const Builder b(graph);
    const Expr weights = graph.input(tensor(a, Shape{1, 3, 2}), true);
    const Expr cost = guided_alignment_cost(b, weights, tensor(g, Shape{1, 3, 2}), {.weight = 0.5, .cost = kind});
    graph.backward(cost);
    const std::vector<float> grad = weights.grad().to_vector<float>();
    double want = 0;
    std::vector<double> want_grad(a.size(), 0.0);
    for (size_t i = 0; i < a.size(); ++i) {
      const bool linked = i / 2 < 2;
      if (kind == GuidedAlignmentCost::ce) {
        want -= 0.5 * g[i] * std::log(a[i] + 1e-6);
        want_grad[i] = -0.5 * g[i] / (a[i] + 1e-6);
      } else if (linked) {
        want += 0.25 * (a[i] - g[i]) * (a[i] - g[i]);
        want_grad[i] = 0.5 * (a[i] - g[i]);
      }
    }
    CHECK(cost.val().item() == Approx(want).epsilon(1e-5));
    for (size_t i = 0; i < a.size(); ++i) CHECK(grad[i] == Approx(want_grad[i]).margin(1e-5));
  }
  Graph graph(Device::cpu(), nullptr, GraphOptions{.training = false});
  CHECK_THROWS_WITH(
      guided_alignment_cost(Builder(graph), graph.input(tensor(a, Shape{1, 3, 2})), tensor(a, Shape{1, 2, 3}), {}),
      Contains("guidance"));
}

namespace {
/// One line of links per pair of dir/train.{src,tgt} (the reversal corpus): target t with source n-1-t, or
/// (`to_first`) with source 0.
void write_links(const std::string& dir, bool to_first) {
  std::ifstream src(dir + "/train.src");
  std::ofstream out(dir + "/train.align");
  for (std::string line; std::getline(src, line);) {
    const auto n = static_cast<int>(std::count(line.begin(), line.end(), ' ') + 1);
    for (int t = 0; t < n; ++t) out << (t ? " " : "") << (to_first ? 0 : n - 1 - t) << "-" << t;
    out << "\n";
  }
}

/// The share of the valid pairs' target words (not </s>) whose most attended source position is `expected(n, t)`
/// (n source words), with the run's last checkpoint.
double agreement(const std::string& dir, const std::function<int(int n, int t)>& expected) {
  const LoadedCheckpoint ck = load_checkpoint(dir + "/run/checkpoint.last.safetensors", Device::cpu());
  const data::Vocab& vocab = ck.first_vocab({"src", "tgt"});
  std::ifstream s(dir + "/valid.src"), t(dir + "/valid.tgt");
  std::vector<std::vector<int32_t>> src, tgt;
  for (std::string a, b; std::getline(s, a) && std::getline(t, b);) {
    src.push_back(vocab.encode(a));
    tgt.push_back(vocab.encode(b));
  }
  const auto heads = align_pairs(*ck.model->encoder_decoder(), *ck.params, Device::cpu(), src, tgt, {});
  int hits = 0, rows = 0;
  for (size_t i = 0; i < heads.size(); ++i)
    for (size_t r = 0; r + 1 < heads[i].size(); ++r, ++rows) {
      const auto& row = heads[i][r];
      hits += std::max_element(row.begin(), row.end()) - row.begin() ==
              expected(static_cast<int>(src[i].size()), static_cast<int>(r));
    }
  return static_cast<double>(hits) / rows;
}
}  // namespace

TEST_CASE("guided alignment: moe-train steers the alignment head", "[training][alignment]") {
  const std::string dir = test::temp_dir("guided");
  test::write_corpora(dir, 400, 40, 7);
  const auto first = [](int, int) { return 0; };
  const auto reversed = [](int n, int t) { return n - 1 - t; };
  auto train = [&](bool guided, bool to_first) {
    TrainOptions o = test::tiny_options(dir);
    o.max_updates = 1000;
    o.valid_every = o.save_every = 1000;
    o.log_every = 100;
    o.schedule = ScheduleOptions{LrScheduleKind::inverse_sqrt, 1e-2, 0, 10, 1000};
    o.run_dir = dir + "/run";
    std::filesystem::remove_all(o.run_dir);
    if (guided) {
      write_links(dir, to_first);
      o.data.train_alignment = dir + "/train.align";
      o.guided_alignment.weight = 1.0;
    }
    Trainer(o).run(false);
  };
  train(false, false);
  const double plain_first = agreement(dir, first), plain_reversed = agreement(dir, reversed);
  train(true, true);
  const double guided_first = agreement(dir, first);
  train(true, false);
  const double guided_reversed = agreement(dir, reversed);
  INFO("unguided: " << plain_first << " on the first source token, " << plain_reversed << " on the reversal; guided to "
                     << "the first: " << guided_first << "; guided to the reversal: " << guided_reversed);
  CHECK(guided_first > 0.9);
  CHECK(plain_first < 0.5);
  CHECK(guided_reversed > 0.75);  // 0.87 measured, after 1,000 updates of a model of width 16
  CHECK(guided_reversed > plain_reversed + 0.2);
  std::filesystem::remove_all(dir);
}
