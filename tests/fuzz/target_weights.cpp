// Fuzzes data-weighting files (lib/data/target_weights.cpp: one line of blank-separated weights per training
// pair, plain or gzip), as moe-train's data.train.weights reads them, both as sentence and as word weights, and the
// weights of a batch over them. Invariants: a bad file is a moe::Error naming the file; an accepted one has a line
// per pair, a finite mean >= 0, and every batch entry finite and >= 0 at a real target, 0 at the padding.
// Seeds: tests/fuzz/seeds/target_weights.
#include "data/target_weights.h"

#include <cmath>
#include <span>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Three pairs of 2, 0 and 4 target tokens.
  static const moe::data::EncodedCorpus tgt({5, 5, 5, 5, 5, 5}, {0, 2, 2, 6});
  const std::string path =
      moe::fuzz::write_file("train.w", std::string_view(reinterpret_cast<const char*>(data), size));
  for (const moe::data::WeightingType type : {moe::data::WeightingType::sentence, moe::data::WeightingType::word}) {
    moe::data::TargetWeights w;
    if (!moe::fuzz::accepts([&] { w = moe::data::TargetWeights::read(path, type, tgt); }, path)) continue;
    FUZZ_REQUIRE(w.lines() == tgt.size(), "a line count other than the pairs'");
    FUZZ_REQUIRE(std::isfinite(w.mean()) && w.mean() >= 0, "a mean weight that is not finite and >= 0");
    std::vector<std::vector<int32_t>> src(3, std::vector<int32_t>{4}), y;
    for (int64_t i = 0; i < tgt.size(); ++i) y.emplace_back(tgt.sentence(i).begin(), tgt.sentence(i).end());
    std::vector<std::span<const int32_t>> sv(src.begin(), src.end()), tv(y.rbegin(), y.rend());
    const moe::data::Batch batch = moe::data::make_batch(sv, tv, {2, 1, 0}, 0, 1, 2);  // in reverse order
    const std::vector<float> v = w.of(batch).to_vector<float>(), mask = batch.tgt_mask.to_vector<float>();
    FUZZ_REQUIRE(v.size() == mask.size(), "batch weights of another shape than the targets'");
    for (size_t i = 0; i < v.size(); ++i)
      FUZZ_REQUIRE(mask[i] != 0 ? std::isfinite(v[i]) && v[i] >= 0 : v[i] == 0,
                   "a batch weight that is negative, not finite, or not 0 at the padding");
  }
  return 0;
}
