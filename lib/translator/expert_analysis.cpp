// expert_analysis.h implementation. Covered by tests/translator/experts_command_test.cpp.
#include "translator/expert_analysis.h"

#include <algorithm>
#include <span>

#include "data/batch.h"
#include "data/lm_stream.h"
#include "layers/sites.h"
#include "models/decoder.h"
#include "translator/pair_scores.h"
#include "translator/translator.h"

namespace moe {

namespace {
const std::string kWordMark = "\xE2\x96\x81";  // U+2581, SentencePiece's word-boundary mark

int group_rank(const std::string& g) { return g == "encoder" ? 0 : g == "decoder" ? 1 : g == "lm" ? 2 : 3; }
int kind_rank(const std::string& k) { return k == "self_attn" ? 0 : k == "cross_attn" ? 1 : k == "ffn" ? 2 : 3; }

void require_gated_sites(const ExpertCollector& c, const Model& model) {
  MOE_CHECK(!c.empty(), "'", c.options().model_name, "' holds a ", model.type(), " model with ", model.site_types(),
            ": it has no gated site (moe-score experts analyses MAE and MoA attention, MoE ffn sites and the MoE "
            "layers of an lstm_lm)");
}
}  // namespace

std::vector<std::vector<TokenUnit>> token_units(const std::vector<int32_t>& ids, const std::vector<double>& mask,
                                                int64_t rows, int64_t cols, const data::Vocab& vocab, bool words) {
  const bool word_vocab = dynamic_cast<const data::WordVocab*>(&vocab) != nullptr;
  auto is_special_id = [&](int32_t id) {
    return id == vocab.pad_id() || id == vocab.bos_id() || id == vocab.eos_id() || id == vocab.unk_id();
  };
  std::vector<std::vector<TokenUnit>> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t prev = -2;
    bool prev_special = false;
    for (int64_t t = 0; t < cols; ++t) {
      const size_t i = static_cast<size_t>(r * cols + t);
      if (mask[i] == 0) continue;
      const int32_t id = ids[i];
      std::string piece = vocab.piece(id);
      const bool is_special = is_special_id(id);
      const bool starts = piece.starts_with(kWordMark);
      auto& units = out[static_cast<size_t>(r)];
      const bool fresh = !words || word_vocab || units.empty() || prev != t - 1 || is_special || prev_special || starts;
      if (words && starts) piece = piece.substr(kWordMark.size());
      if (fresh) {
        units.push_back({piece, {t}});
      } else {
        units.back().text += piece;
        units.back().positions.push_back(t);
      }
      prev = t;
      prev_special = is_special;
    }
  }
  return out;
}

void ExpertCollector::add(const std::string& group, const GateRecorder& recorder, const Tensor& tokens,
                          const Tensor& mask, const data::Vocab& vocab) {
  MOE_CHECK(tokens.shape().ndim() == 2 && mask.shape() == tokens.shape(), "experts: tokens ", tokens.shape(),
            " and mask ", mask.shape(), " must be [B, T]");
  const int64_t rows = tokens.shape()[0], cols = tokens.shape()[1];
  const auto units =
      token_units(tokens.to(Device::cpu()).to_vector<int32_t>(), mask.to(Device::cpu()).to_vector<double>(), rows, cols,
                  vocab, o_.unit == PmiUnit::word);
  for (const auto& entry : recorder.records()) {
    const auto& site =
        entry.first;  // a plain reference, not a structured binding: clang 14's lambdas cannot capture those
    for (const GateRecord& r : entry.second) {
      const int64_t e = r.probs.shape().last();
      const bool per_sentence = r.family == "mae" && r.probs.shape().ndim() == 2;
      auto it = std::find_if(sites_.begin(), sites_.end(), [&](const auto& s) { return s->site() == site; });
      if (it == sites_.end()) {
        sites_.push_back(std::make_unique<SiteStats>(site, r.family, r.policy, group, e, per_sentence));
        it = sites_.end() - 1;
      }
      SiteStats& st = **it;
      st.add_record_info(r);
      MOE_CHECK(st.experts() == e && st.per_sentence() == per_sentence, "experts: site ", site, " reported gates ",
                r.probs.shape(), " after gates over ", st.experts(), " experts");
      const std::vector<float> probs = r.probs.to_vector<float>();
      auto gate = [&](int64_t row) { return std::span<const float>(probs).subspan(static_cast<size_t>(row * e), e); };
      if (per_sentence) {
        MOE_CHECK(r.probs.shape()[0] == rows, "experts: site ", site, " reported ", r.probs.shape()[0],
                  " sentence gates for a batch of ", rows);
        for (int64_t b = 0; b < rows; ++b) {
          if (units[static_cast<size_t>(b)].empty()) continue;
          const int a = st.add_gate(gate(b));
          for (const TokenUnit& u : units[static_cast<size_t>(b)]) st.add_event(u.text, a);
        }
        continue;
      }
      MOE_CHECK(r.probs.numel() == rows * cols * e, "experts: site ", site, " reported gates ", r.probs.shape(),
                " for a batch of ", rows, " x ", cols, " tokens");
      const bool routed = r.experts.defined();
      const int64_t k = routed ? r.experts.shape().last() : 0;
      const std::vector<int32_t> ex = routed ? r.experts.to_vector<int32_t>() : std::vector<int32_t>{};
      const std::vector<float> gs = routed ? r.gates.to_vector<float>() : std::vector<float>{};
      for (int64_t b = 0; b < rows; ++b) {
        for (const TokenUnit& u : units[static_cast<size_t>(b)]) {
          std::vector<float> sum(static_cast<size_t>(e), 0.f);
          int a = 0;
          for (int64_t t : u.positions) {
            const int64_t row = b * cols + t;
            a = st.add_gate(gate(row));
            for (int64_t j = 0; j < e; ++j) sum[static_cast<size_t>(j)] += gate(row)[static_cast<size_t>(j)];
            if (!routed) continue;
            const auto sx = std::span<const int32_t>(ex).subspan(static_cast<size_t>(row * k), k);
            const auto sg = std::span<const float>(gs).subspan(static_cast<size_t>(row * k), k);
            st.add_routed(sx, sg);
            if (o_.attribution == PmiAttribution::routed)
              for (int64_t j = 0; j < k; ++j)
                if (sx[static_cast<size_t>(j)] >= 0 && sg[static_cast<size_t>(j)] > 0)
                  st.add_event(u.text, sx[static_cast<size_t>(j)]);
          }
          if (routed && o_.attribution == PmiAttribution::routed) continue;
          st.add_event(u.text, u.positions.size() == 1 ? a : argmax_expert(sum));
        }
      }
    }
  }
}

std::vector<SiteSummary> ExpertCollector::summaries(int64_t min_count, int top) const {
  std::vector<SiteSummary> out;
  for (const auto& s : sites_) out.push_back(s->summary(min_count, top));
  std::stable_sort(out.begin(), out.end(), [](const SiteSummary& a, const SiteSummary& b) {
    return std::make_tuple(group_rank(a.group), a.layer, kind_rank(a.kind), a.site) <
           std::make_tuple(group_rank(b.group), b.layer, kind_rank(b.kind), b.site);
  });
  return out;
}

ExpertRunInfo collect_pairs(const Model& model, ParameterStore& params, Device device,
                            std::vector<std::vector<int32_t>> src, std::vector<std::vector<int32_t>> tgt,
                            const data::Vocab& src_vocab, const data::Vocab& tgt_vocab, ExpertCollector& out) {
  const EncoderDecoder* net = model.encoder_decoder();
  MOE_CHECK(net, "experts: a ", model.type(), " model has no encoder-decoder to run over pairs");
  MOE_CHECK(src.size() == tgt.size(), "experts: ", src.size(), " source lines but ", tgt.size(), " target lines");
  const DecoderSpec spec = net->spec();
  const int32_t pad = spec.pad_id, bos = spec.bos_id, eos = spec.eos_id;
  const int64_t keep = spec.max_positions - 1;
  ExpertRunInfo info;
  std::vector<int64_t> cost(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    for (auto* s : {&src[i], &tgt[i]}) {
      if (static_cast<int64_t>(s->size()) <= keep) continue;
      s->resize(static_cast<size_t>(keep));
      ++info.truncated;
    }
    cost[i] = static_cast<int64_t>(std::max(src[i].size(), tgt[i].size())) + 1;
  }
  GraphOptions go;
  go.training = false;
  go.compute_dtype = out.options().dtype;
  for (const auto& idx : token_batches(cost, out.options().max_tokens)) {
    const data::Batch b = pair_batch(src, tgt, idx, pad, bos, eos);
    info.sentences += b.size();
    info.src_tokens += b.src_tokens;
    info.tgt_tokens += b.tgt_tokens;
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = out.options().experts;
    GateRecorder rec;
    builder.context().recorder = &rec;
    const Tensor src_mask = b.src_mask.to(device);
    Expr memory = net->encode(builder, b.src.to(device), src_mask);
    out.add("encoder", rec, b.src, b.src_mask, src_vocab);
    rec.clear();
    net->decode(builder, memory, src_mask, b.tgt_in.to(device), b.tgt_mask.to(device));
    out.add("decoder", rec, b.tgt_in, b.tgt_mask, tgt_vocab);
    require_gated_sites(out, model);
    if (out.options().after_batch) out.options().after_batch();
  }
  return info;
}

ExpertRunInfo collect_lm(const Model& model, ParameterStore& params, Device device, const std::vector<int32_t>& stream,
                         const data::Vocab& vocab, ExpertCollector& out) {
  MOE_CHECK(model.is_language_model(), "experts: a ", model.type(), " model is not a language model");
  const ExpertAnalysisOptions& o = out.options();
  MOE_CHECK(o.context >= 1, "experts: --context must be positive, got ", o.context);
  const int64_t stride = o.stride > 0 ? o.stride : std::max<int64_t>(1, o.context / 2);
  MOE_CHECK(stride <= o.context, "experts: --stride ", stride, " exceeds --context ", o.context);
  const int64_t windows = std::max<int64_t>(1, o.max_tokens / o.context);
  ExpertRunInfo info;
  GraphOptions go;
  go.training = false;
  go.compute_dtype = o.dtype;
  for (const data::LmBatch& cpu :
       data::eval_batches(stream, o.context, stride, windows, vocab.eos_id(), vocab.pad_id())) {
    data::LmBatch b = cpu;
    b.input = cpu.input.to(device);
    b.target = cpu.target.to(device);
    b.mask = cpu.mask.to(device);
    Graph g(device, &params, go);
    Builder builder(g);
    builder.context().experts = out.options().experts;
    GateRecorder rec;
    builder.context().recorder = &rec;
    model.lm_loss(builder, b, 0.f);
    out.add("lm", rec, cpu.input, cpu.mask, vocab);
    require_gated_sites(out, model);
    info.lm_tokens += cpu.tokens;
    if (o.after_batch) o.after_batch();
  }
  return info;
}

}  // namespace moe
