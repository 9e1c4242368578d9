// Optimizer (see optimizer.h): norm over trainable ranges (less the unclipped ones), clipping factor,
// one fused kernel call per trainable range (lib/ops/optimizer.h), and the checkpoint state. Covered by
// tests/ops/optimizer_test.cpp.
#include "training/optimizer.h"

#include <algorithm>
#include <cmath>

#include "ops/optimizer.h"

namespace moe {

std::unique_ptr<Optimizer> Optimizer::create(const std::string& name, const OptimizerOptions& options) {
  return create(parse_enum<Kind>(name, "optimizer"), options);
}

std::unique_ptr<Optimizer> Optimizer::create(Kind kind, const OptimizerOptions& options) {
  return std::make_unique<Optimizer>(kind, options);
}

const char* Optimizer::name() const { return enum_name(kind_).c_str(); }

double Optimizer::grad_norm(const ParameterStore& store, double grad_scale) {
  return grad_norm(store, store.trainable_ranges(), grad_scale);
}

double Optimizer::grad_norm(const ParameterStore& store, const ParameterStore::Ranges& ranges, double grad_scale) {
  double sum = 0;
  for (const auto& [begin, end] : ranges) sum += sum_squares(store.grads().flat_range(begin, end - begin));
  return std::sqrt(sum) * std::abs(grad_scale);
}

void Optimizer::set_shard(int64_t begin, int64_t end) {
  MOE_CHECK(begin >= 0 && end >= begin, "Optimizer::set_shard: bad range [", begin, ", ", end, ")");
  shard_begin_ = begin;
  shard_end_ = end;
}

void Optimizer::set_partitioned(ParameterStore::Ranges ranges, std::function<double(double)> sum) {
  partitioned_ = std::move(ranges);
  partitioned_sum_ = std::move(sum);
}

void Optimizer::set_unclipped(ParameterStore::Ranges ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size(); ++i)
    MOE_CHECK(ranges[i].first <= ranges[i].second && (i == 0 || ranges[i - 1].second <= ranges[i].first),
              "Optimizer::set_unclipped: ranges must be disjoint, [", ranges[i].first, ", ", ranges[i].second, ")");
  unclipped_ = std::move(ranges);
}

namespace {
/// `ranges` split into the parts outside `cut` and the parts inside it (`cut` sorted and disjoint).
std::pair<ParameterStore::Ranges, ParameterStore::Ranges> split_ranges(const ParameterStore::Ranges& ranges,
                                                                       const ParameterStore::Ranges& cut) {
  ParameterStore::Ranges outside, inside;
  for (const auto& [begin, end] : ranges) {
    int64_t at = begin;
    for (const auto& [cb, ce] : cut) {
      const int64_t b = std::max(at, cb), e = std::min(end, ce);
      if (e <= b) continue;
      if (b > at) outside.emplace_back(at, b);
      inside.emplace_back(b, e);
      at = e;
    }
    if (end > at) outside.emplace_back(at, end);
  }
  return {outside, inside};
}
}  // namespace

double Optimizer::partitioned_norm(const ParameterStore& store, const ParameterStore::Ranges& ranges,
                                   double grad_scale) const {
  double shared = 0, own = 0;
  for (const auto& [begin, end] : ranges) {
    int64_t at = begin;
    for (const auto& [pb, pe] : partitioned_) {  // sorted, disjoint
      const int64_t b = std::max(at, pb), e = std::min(end, pe);
      if (e <= b) continue;
      if (b > at) shared += sum_squares(store.grads().flat_range(at, b - at));
      own += sum_squares(store.grads().flat_range(b, e - b));
      at = e;
    }
    if (end > at) shared += sum_squares(store.grads().flat_range(at, end - at));
  }
  return std::sqrt(shared + partitioned_sum_(own)) * std::abs(grad_scale);
}

void Optimizer::ensure_buffers(const ParameterStore& store) {
  const int64_t n = sharded() ? shard_end_ - shard_begin_ : store.values().numel();
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  const bool momentum = kind_ == Kind::nag || (kind_ == Kind::sgd && options_.momentum != 0);
  if (m_.defined() && m_.device() != store.device()) m_ = m_.to(store.device());  // loaded on another device
  if (v_.defined() && v_.device() != store.device()) v_ = v_.to(store.device());
  if (adam || momentum) {
    if (!m_.defined()) m_ = Tensor::zeros(Shape{n}, DType::f32, store.device());
    MOE_CHECK(m_.numel() == n && m_.device() == store.device(), "Optimizer ", name(), ": state of ", m_.numel(),
              " elements on ", m_.device(), " but the parameter store has ", n, " on ", store.device());
  }
  if (adam && !v_.defined()) v_ = Tensor::zeros(Shape{n}, DType::f32, store.device());
  MOE_CHECK(!v_.defined() || v_.numel() == n, "Optimizer ", name(), ": state of ", v_.numel(),
            " elements but the parameter store has ", n);
}

double Optimizer::step(ParameterStore& store, double lr, double clip_norm, double grad_scale) {
  MOE_CHECK(store.values().defined(), "Optimizer::step: the parameter store is not allocated");
  return step(store, store.trainable_ranges(), lr, clip_norm, grad_scale);
}

double Optimizer::step(ParameterStore& store, const ParameterStore::Ranges& ranges, double lr, double clip_norm,
                       double grad_scale) {
  MOE_CHECK(store.values().defined(), "Optimizer::step: the parameter store is not allocated");
  MOE_CHECK(clip_norm >= 0, "Optimizer::step: clip_norm must be >= 0, got ", clip_norm);
  const auto [clipped, unclipped] = split_ranges(ranges, unclipped_);
  const double norm =
      partitioned_.empty() ? grad_norm(store, clipped, grad_scale) : partitioned_norm(store, clipped, grad_scale);
  if (!std::isfinite(norm)) return norm;  // overflow: skip this update
  if (const double f = grad_norm(store, unclipped, grad_scale); !std::isfinite(f)) return f;
  double scale = grad_scale;
  if (clip_norm > 0 && norm > clip_norm) scale *= clip_norm / norm;
  ensure_buffers(store);
  ++steps_;
  const float flr = static_cast<float>(lr);
  const float wd = static_cast<float>(options_.weight_decay), mu = static_cast<float>(options_.momentum);
  const float lr_correct = kind_ == Kind::nag && lr_old_ > 0 ? static_cast<float>(lr / lr_old_) : 1.f;
  for (size_t r = 0; r < clipped.size() + unclipped.size(); ++r) {
    const bool outside_norm = r >= clipped.size();
    auto [begin, end] = outside_norm ? unclipped[r - clipped.size()] : clipped[r];
    const float fscale = static_cast<float>(outside_norm ? grad_scale : scale);
    if (sharded()) {  // only this rank's shard; state offsets relative to it
      begin = std::max(begin, shard_begin_);
      end = std::min(end, shard_end_);
      if (end <= begin) continue;
    }
    const int64_t count = end - begin, at = begin - (sharded() ? shard_begin_ : 0);
    const Tensor p = store.values().flat_range(begin, count), g = store.grads().flat_range(begin, count);
    switch (kind_) {
      case Kind::adam:
      case Kind::adamw:
        adam_update(p, g, m_.flat_range(at, count), v_.flat_range(at, count), flr, static_cast<float>(options_.beta1),
                    static_cast<float>(options_.beta2), static_cast<float>(options_.eps), wd, kind_ == Kind::adamw,
                    steps_, fscale);
        break;
      case Kind::sgd:
        sgd_update(p, g, m_.defined() ? m_.flat_range(at, count) : Tensor(), flr, mu, wd, false, fscale);
        break;
      case Kind::nag:
        sgd_update(p, g, m_.flat_range(at, count), flr, mu, wd, true, fscale, lr_correct);
        break;
    }
  }
  lr_old_ = lr;
  return norm;
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> s;
  s["step"] = Tensor::scalar(static_cast<double>(steps_), DType::i64, Device::cpu());
  if (kind_ == Kind::nag) s["lr_old"] = Tensor::scalar(lr_old_, DType::f64, Device::cpu());
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  if (m_.defined()) s[adam ? "adam.m" : "momentum"] = m_;
  if (v_.defined()) s["adam.v"] = v_;
  return s;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  auto it = state.find("step");
  MOE_CHECK(it != state.end() && it->second.numel() == 1, "Optimizer::load_state (", name(),
            "): the state has no 'step' entry");
  steps_ = static_cast<int64_t>(it->second.item());
  if (kind_ == Kind::nag) {
    auto lr = state.find("lr_old");
    lr_old_ = lr == state.end() ? 0.0 : lr->second.item();
  }
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  auto load = [&](const char* key, Tensor& dst) {
    auto found = state.find(key);
    if (found == state.end()) {
      dst = Tensor();
      return;
    }
    Tensor src = found->second;
    MOE_CHECK(src.dtype() == DType::f32 && src.shape().ndim() == 1, "Optimizer::load_state (", name(), "): '", key,
              "' must be an f32 vector, got ", dtype_name(src.dtype()), " ", src.shape());
    if (sharded() && src.numel() > shard_end_ - shard_begin_) {  // a full (unsharded) state: take this shard
      MOE_CHECK(src.numel() >= shard_end_, "Optimizer::load_state (", name(), "): '", key, "' has ", src.numel(),
                " elements, the shard needs [", shard_begin_, ", ", shard_end_, ")");
      src = src.flat_range(shard_begin_, shard_end_ - shard_begin_);
    }
    if (!dst.defined() || dst.numel() != src.numel()) dst = Tensor::empty(src.shape(), DType::f32, src.device());
    dst.copy_from(src);
  };
  load(adam ? "adam.m" : "momentum", m_);
  if (adam) load("adam.v", v_);
  MOE_CHECK(!adam || m_.defined() == v_.defined(), "Optimizer::load_state (", name(),
            "): 'adam.m' and 'adam.v' must come together");
}

}  // namespace moe
