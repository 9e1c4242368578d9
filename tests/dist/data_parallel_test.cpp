// Data parallelism end to end (run by ctest under mpirun -np 2 and -np 4, and as one process): N
// ranks with train.max_tokens B/N train recipes/ci-tiny.yml (f32, CPU, dropout 0) for 20 updates on
// the first 1,000 Multi30k pairs (a synthetic corpus when the shared data is absent), with optimizer
// sharding on and off; rank 0 then trains the same 20 updates alone with batch B. Every rank must end
// with bit-identical parameters, and they must match the single process's (f32: the ranks sum their
// gradients in another order than one process): mean |difference| < 2e-6 and max |difference| below
// one Adam step at the last learning rate (see the check). Also the pieces: rank_slice and GradSync.
#include "training/data_parallel.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/recipe_args.h"
#include "dist/grad_sync.h"
#include "dist_test_util.h"
#include "training/trainer.h"
#include "training/training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;
using moe::test::comm;

namespace {

/// A folder every rank agrees on (rank 0's pid), made fresh by rank 0.
std::string shared_dir(const std::string& name) {
  dist::Communicator& c = comm();
  Tensor pid = Tensor::from_vector(std::vector<int64_t>{static_cast<int64_t>(::getpid())}, Shape{1});
  c.broadcast(pid, 0);
  const std::string dir =
      (fs::temp_directory_path() / ("moe-dist-" + name + "-" + std::to_string(pid.to_vector<int64_t>()[0]))).string();
  if (c.rank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  c.barrier();
  return dir;
}

/// recipes/ci-tiny.yml on `dir`'s data, dropout 0, no validation, 20 updates.
TrainOptions ci_tiny(const std::string& dir, bool real) {
  config::Schema schema;
  register_train_keys(schema);
  std::vector<std::string> args{"--config",
                                std::string(MOE_SOURCE_DIR) + "/recipes/ci-tiny.yml",
                                "--model.dropout",
                                "0",
                                "--train.max_updates",
                                "20",
                                "--train.save_every",
                                "0",
                                "--train.keep_last",
                                "0",
                                "--train.log_every",
                                "5"};
  const std::string src = real ? "train.en" : "train.src", tgt = real ? "train.de" : "train.tgt";
  const std::string vocab = real ? "vocab.spm" : "vocab.txt";
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"--data.train.src", dir + "/" + src},
                                                                             {"--data.train.tgt", dir + "/" + tgt},
                                                                             {"--data.vocab.src", dir + "/" + vocab},
                                                                             {"--data.vocab.tgt", dir + "/" + vocab}}) {
    args.push_back(k);
    args.push_back(v);
  }
  return TrainOptions::from_config(config::load_config(schema, args));
}

bool prepare_data(const std::string& dir) {
  const std::string m = std::string(MOE_SHARED_DATA) + "/multi30k";
  const bool real = fs::exists(m + "/train.en");
  if (comm().rank() == 0) {
    if (real) {
      for (const char* lang : {"en", "de"}) {
        std::ifstream in(m + "/train." + lang);
        std::ofstream out(dir + "/train." + lang);
        std::string line;
        for (int i = 0; i < 1000 && std::getline(in, line); ++i) out << line << '\n';
      }
    } else {
      test::write_corpus(dir, "train", 1000, 5);
    }
  }
  comm().barrier();
  return real;
}

std::vector<float> train(TrainOptions o, dist::Communicator& c) {
  Trainer t(o);
  t.set_communicator(&c);
  t.run(false);
  return t.params().values().to_vector<float>();
}

}  // namespace

TEST_CASE("dist: rank_slice splits a global batch into the ranks' rows", "[dist]") {
  std::vector<std::span<const int32_t>> src, tgt;
  std::vector<std::vector<int32_t>> words{{5}, {5, 6}, {5, 6, 7}, {5, 6, 7, 8}, {9, 9}};
  for (const auto& w : words) src.emplace_back(w), tgt.emplace_back(w);
  const TrainBatch whole{data::make_batch(src, tgt, {0, 1, 2, 3, 4}, 0, 1, 2)};
  int64_t tokens = 0, rows = 0;
  for (int r = 0; r < 3; ++r) {
    const TrainBatch s = rank_slice(whole, r, 3);
    const auto& b = std::get<data::Batch>(s.data);
    rows += s.size();
    tokens += s.tokens();
    if (s.size()) CHECK(b.ids.front() == 5 * r / 3);
    if (s.size()) CHECK(b.tgt_rows.numel() == s.tokens());  // the slice's own real targets, positions in the slice
    if (s.size()) CHECK(b.tgt_rows.to_vector<int32_t>().back() < b.tgt_out.numel());
    if (s.size()) CHECK(b.src_rows.numel() == b.src_tokens);  // and real source positions
    if (s.size()) CHECK(b.src_rows.to_vector<int32_t>().back() < b.src.numel());
  }
  CHECK(rows == 5);
  CHECK(tokens == whole.tokens());
  CHECK(rank_slice(whole, 0, 8).size() == 0);  // more ranks than rows: empty slices
}

TEST_CASE("dist: GradSync sums every bucket over the ranks, whatever order parameters complete in", "[dist]") {
  dist::Communicator& c = comm();
  ParameterStore store(Device::cpu(), 3);
  for (int i = 0; i < 7; ++i) store.declare("p" + std::to_string(i), Shape{10 + 13 * i}, Init::zeros());
  store.allocate();
  dist::GradSync sync(c, store, 64);  // 16 floats per bucket: large parameters span several
  CHECK(sync.bucket_count() > 7);
  for (int round = 0; round < 2; ++round) {
    std::vector<float> g(static_cast<size_t>(store.grads().numel()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((c.rank() + 1) * (i % 97) + round);
    Tensor(store.grads()).copy_from(Tensor::from_vector(g, Shape{store.grads().numel()}));
    sync.begin();
    for (int p : {6, 5, 2, 4}) sync.ready(p);  // an arbitrary order; 0, 1, 3 never reported
    sync.finish();
    const auto got = store.grads().to_vector<float>();
    const int n = c.world();
    for (const ParamEntry& e : store.entries())
      for (int64_t i = e.offset; i < e.offset + e.shape.numel(); ++i)
        REQUIRE(got[static_cast<size_t>(i)] == static_cast<float>(n * (n + 1) / 2 * (i % 97) + n * round));
  }
  CHECK(sync.stats().buckets == 2 * sync.bucket_count());
}

TEST_CASE("dist: N ranks with batch B/N train recipes/ci-tiny.yml like one process with batch B",
          "[dist][data_parallel]") {
  dist::Communicator& c = comm();
  const int n = c.world();
  const std::string dir = shared_dir("dp");
  const bool real = prepare_data(dir);
  TrainOptions base = ci_tiny(dir, real);
  const int64_t global_batch = base.max_tokens;  // 1200 target+source tokens per side
  // The reference: one process, batch B (rank 0 only), in its own run folder.
  std::vector<float> reference;
  if (c.rank() == 0) {
    TrainOptions one = base;
    one.run_dir = dir + "/one";
    auto local = dist::make_local_communicator();
    reference = train(one, *local);
  }
  c.barrier();
  for (const char* shard : {"off", "on"}) {
    if (n == 1 && std::string(shard) == "on") continue;  // nothing to shard
    INFO(n << " ranks, shard_optimizer " << shard);
    TrainOptions o = base;
    o.max_tokens = global_batch / n;
    o.dist.shard_optimizer = parse_enum<ShardOptimizer>(shard, "dist.shard_optimizer");
    o.run_dir = dir + "/run-" + shard;
    const std::vector<float> mine = train(o, c);
    // Every rank holds rank 0's parameters exactly.
    Tensor lead = Tensor::from_vector(mine, Shape{static_cast<int64_t>(mine.size())});
    c.broadcast(lead, 0);
    CHECK(lead.to_vector<float>() == mine);
    if (c.rank() == 0) {
      REQUIRE(mine.size() == reference.size());
      double max_diff = 0, mean_diff = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        const double diff = std::abs(double(mine[i]) - double(reference[i]));
        max_diff = std::max(max_diff, diff);
        mean_diff += diff / double(mine.size());
      }
      WARN("dist: " << n << " ranks, shard_optimizer " << shard << ": |parameter difference| vs one process: max "
                    << max_diff << ", mean " << mean_diff);
      // Adam's step is lr * m / sqrt(v): an element whose gradient is near 0 can flip sign with the
      // summation order and move by up to about lr per update either way, so the bound on the largest
      // difference is one step at the last learning rate (1.2e-3); the mean difference must be tiny.
      CHECK(max_diff < 1.2e-3);
      CHECK(mean_diff < 2e-6);
      CHECK(fs::exists(o.run_dir + "/checkpoint.last.safetensors"));
      // The log (rank 0's) shows the global batch's losses: the single process's, and falling.
      const auto ours = test::read_metrics(o.run_dir), theirs = test::read_metrics(dir + "/one");
      REQUIRE(ours.size() == theirs.size());
      REQUIRE(ours.back().update == 20);
      for (size_t i = 0; i < ours.size(); ++i) CHECK(ours[i].loss == Approx(theirs[i].loss).epsilon(1e-4));
      CHECK(ours.back().loss < ours.front().loss - 0.3);
    }
    c.barrier();
  }
  if (c.rank() == 0) fs::remove_all(dir);
}
