// Guided-alignment training's loss (lib/training/guided_alignment.h): for every translation family, the loss with
// guidance is the model's loss plus the cost of the alignment head that Decoder::alignment gives (align_pairs),
// read in the same teacher-forced pass, and the build context is left as it was.
#include <catch2/catch.hpp>
#include <cmath>

#include "training/guided_alignment.h"
#include "translator/pair_alignment.h"
#include "translator/tiny_model.h"

using namespace moe;

TEST_CASE("guided alignment: the model's loss plus its alignment head's cost", "[training][alignment]") {
  const std::vector<std::vector<int32_t>> src = {{4, 9, 13, 5}, {7, 8}}, tgt = {{8, 6, 11}, {15, 16, 17, 18}};
  const std::vector<int32_t> s0(4, 4);
  const data::EncodedCorpus sc({4, 9, 13, 5, 7, 8}, {0, 4, 6}), tc({8, 6, 11, 15, 16, 17, 18}, {0, 3, 7});
  const data::WordAlignments links({{{0, 0}, {3, 2}, {1, 1}}, {{1, 0}, {0, 3}, {1, 3, 0.5f}}}, sc, tc);
  const data::Batch batch = data::make_batch({src[1], src[0]}, {tgt[1], tgt[0]}, {1, 0}, 0, 2, 3);
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 3);
      const GuidedAlignmentOptions o{.weight = 0.3, .cost = GuidedAlignmentCost::ce};
      Graph g(Device::cpu(), m.params.get(), GraphOptions{.training = false});
      const Builder b(g);
      const double with = loss_with_guided_alignment(*m.model, b, batch, batch, 0.f, links, o).val().item();
      CHECK(b.context().alignment == nullptr);  // restored
      Graph g2(Device::cpu(), m.params.get(), GraphOptions{.training = false});
      const double plain = m.model->loss(Builder(g2), batch, 0.f).val().item();
      // the cost written out over the alignments align_pairs gives (Decoder::alignment)
      const auto heads = align_pairs(m.net(), *m.params, Device::cpu(), {src[1], src[0]}, {tgt[1], tgt[0]}, {});
      const std::vector<float> guide = links.guidance(batch).to_vector<float>();
      const int64_t T = batch.tgt_in.shape()[1], S = batch.src.shape()[1];
      double cost = 0;
      for (size_t r = 0; r < heads.size(); ++r)
        for (size_t t = 0; t < heads[r].size(); ++t)
          for (size_t s = 0; s < heads[r][t].size(); ++s)
            cost -= 0.3 * guide[(r * static_cast<size_t>(T) + t) * static_cast<size_t>(S) + s] *
                    std::log(heads[r][t][s] + 1e-6);
      CHECK(cost > 0);
      CHECK(with == Approx(plain + cost).epsilon(1e-4));
    }
  }
}
