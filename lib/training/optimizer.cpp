// Optimizer (see optimizer.h): the sums of squares over the trainable ranges (the unclipped ones and
// this rank's own partitioned parts in slots of their own) into the scalars on the store's device, one
// prepare_step there (norm, skip, clip factor, step count), one fused update per trainable range reading
// them (lib/ops/optimizer.h), and the checkpoint state. Covered by tests/ops/optimizer_test.cpp,
// tests/gpu/optimizer_parity_test.cpp, tests/gpu/update_graph_test.cpp, tests/emu/optimizer_no_sync_test.cpp.
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

void Optimizer::set_shard(int64_t begin, int64_t end) {
  MOE_CHECK(begin >= 0 && end >= begin, "Optimizer::set_shard: bad range [", begin, ", ", end, ")");
  shard_begin_ = begin;
  shard_end_ = end;
}

void Optimizer::set_partitioned(ParameterStore::Ranges ranges, std::function<void(const Tensor&)> all_reduce) {
  partitioned_ = std::move(ranges);
  partitioned_all_reduce_ = std::move(all_reduce);
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

void Optimizer::add_norms(const ParameterStore& store, const ParameterStore::Ranges& clipped,
                          const ParameterStore::Ranges& unclipped) const {
  const Tensor& grads = store.grads();
  const Tensor shared = slot(StepSlot::clipped_sq), own = slot(StepSlot::partitioned_sq);
  for (const auto& [begin, end] : clipped) {
    int64_t at = begin;
    for (const auto& [pb, pe] : partitioned_) {  // sorted, disjoint
      const int64_t b = std::max(at, pb), e = std::min(end, pe);
      if (e <= b) continue;
      if (b > at) add_sum_squares(grads.flat_range(at, b - at), shared);
      add_sum_squares(grads.flat_range(b, e - b), own);
      at = e;
    }
    if (end > at) add_sum_squares(grads.flat_range(at, end - at), shared);
  }
  for (const auto& [begin, end] : unclipped)
    add_sum_squares(grads.flat_range(begin, end - begin), slot(StepSlot::unclipped_sq));
}

void Optimizer::ensure_buffers(const ParameterStore& store) {
  const int64_t n = sharded() ? shard_end_ - shard_begin_ : store.values().numel();
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  const bool momentum = kind_ == Kind::nag || (kind_ == Kind::sgd && options_.momentum != 0);
  if (m_.defined() && m_.device() != store.device()) m_ = m_.to(store.device());  // loaded on another device
  if (v_.defined() && v_.device() != store.device()) v_ = v_.to(store.device());
  if (scalars_.defined() && scalars_.device() != store.device()) scalars_ = scalars_.to(store.device());
  if (adam || momentum) {
    if (!m_.defined()) m_ = Tensor::zeros(Shape{n}, DType::f32, store.device());
    MOE_CHECK(m_.numel() == n && m_.device() == store.device(), "Optimizer ", name(), ": state of ", m_.numel(),
              " elements on ", m_.device(), " but the parameter store has ", n, " on ", store.device());
  }
  if (adam && !v_.defined()) v_ = Tensor::zeros(Shape{n}, DType::f32, store.device());
  MOE_CHECK(!v_.defined() || v_.numel() == n, "Optimizer ", name(), ": state of ", v_.numel(),
            " elements but the parameter store has ", n);
  if (!scalars_.defined()) {
    if (loaded_steps_ == 0 && loaded_lr_old_ == 0) {  // fresh: zeros, with no copy from the host
      scalars_ = Tensor::zeros(Shape{StepSlot::count}, DType::f64, store.device());
    } else {
      std::vector<double> s(StepSlot::count, 0.0);
      s[StepSlot::step] = static_cast<double>(loaded_steps_);
      s[StepSlot::lr_old] = loaded_lr_old_;
      scalars_ = Tensor::from_vector(s, Shape{StepSlot::count}, store.device());
    }
  }
}

void Optimizer::set_step_inputs(const ParameterStore& store, double lr, double grad_scale) {
  MOE_CHECK(store.values().defined(), "Optimizer::set_step_inputs: the parameter store is not allocated");
  ensure_buffers(store);
  moe::set_step_inputs(scalars_, lr, grad_scale);
}

void Optimizer::queue_step(ParameterStore& store, const ParameterStore::Ranges& ranges, double clip_norm) {
  MOE_CHECK(store.values().defined(), "Optimizer::queue_step: the parameter store is not allocated");
  MOE_CHECK(clip_norm >= 0, "Optimizer::queue_step: clip_norm must be >= 0, got ", clip_norm);
  MOE_CHECK(scalars_.defined() && scalars_.device() == store.device(),
            "Optimizer::queue_step: call set_step_inputs with this store first");
  const auto [clipped, unclipped] = split_ranges(ranges, unclipped_);
  scalars_.flat_range(StepSlot::clipped_sq, 3).zero_();  // clipped_sq, partitioned_sq, unclipped_sq
  add_norms(store, clipped, unclipped);
  if (!partitioned_.empty()) partitioned_all_reduce_(slot(StepSlot::partitioned_sq));
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  prepare_step(scalars_, StepConfig{clip_norm, static_cast<float>(options_.beta1), static_cast<float>(options_.beta2),
                                    adam, kind_ == Kind::nag});
  const float wd = static_cast<float>(options_.weight_decay), mu = static_cast<float>(options_.momentum);
  AdamCoeffs adam_base{};  // lr, grad_scale and the bias corrections come from the scalars
  adam_base.beta1 = static_cast<float>(options_.beta1);
  adam_base.beta2 = static_cast<float>(options_.beta2);
  adam_base.eps = static_cast<float>(options_.eps);
  adam_base.weight_decay = wd;
  adam_base.decoupled = kind_ == Kind::adamw;
  const SgdCoeffs sgd_base{0.f, mu, wd, 0.f, 1.f, kind_ == Kind::nag};
  for (size_t r = 0; r < clipped.size() + unclipped.size(); ++r) {
    const bool outside_norm = r >= clipped.size();
    auto [begin, end] = outside_norm ? unclipped[r - clipped.size()] : clipped[r];
    const StepScale which = outside_norm ? StepScale::unclipped : StepScale::clipped;
    if (sharded()) {  // only this rank's shard; state offsets relative to it
      begin = std::max(begin, shard_begin_);
      end = std::min(end, shard_end_);
      if (end <= begin) continue;
    }
    const int64_t count = end - begin, at = begin - (sharded() ? shard_begin_ : 0);
    const Tensor p = store.values().flat_range(begin, count), g = store.grads().flat_range(begin, count);
    if (adam)
      adam_update(p, g, m_.flat_range(at, count), v_.flat_range(at, count), adam_base, scalars_, which);
    else
      sgd_update(p, g, m_.defined() ? m_.flat_range(at, count) : Tensor(), sgd_base, scalars_, which);
  }
}

double Optimizer::last_norm() const {
  MOE_CHECK(scalars_.defined(), "Optimizer::last_norm: no step was queued");
  return slot(StepSlot::norm).item();
}

int64_t Optimizer::steps() const {
  return scalars_.defined() ? static_cast<int64_t>(slot(StepSlot::step).item()) : loaded_steps_;
}

double Optimizer::step(ParameterStore& store, double lr, double clip_norm, double grad_scale) {
  MOE_CHECK(store.values().defined(), "Optimizer::step: the parameter store is not allocated");
  return step(store, store.trainable_ranges(), lr, clip_norm, grad_scale);
}

double Optimizer::step(ParameterStore& store, const ParameterStore::Ranges& ranges, double lr, double clip_norm,
                       double grad_scale) {
  MOE_CHECK(store.values().defined(), "Optimizer::step: the parameter store is not allocated");
  MOE_CHECK(clip_norm >= 0, "Optimizer::step: clip_norm must be >= 0, got ", clip_norm);
  set_step_inputs(store, lr, grad_scale);
  queue_step(store, ranges, clip_norm);
  return last_norm();
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> s;
  s["step"] = Tensor::scalar(static_cast<double>(steps()), DType::i64, Device::cpu());
  if (kind_ == Kind::nag)
    s["lr_old"] =
        Tensor::scalar(scalars_.defined() ? slot(StepSlot::lr_old).item() : loaded_lr_old_, DType::f64, Device::cpu());
  const bool adam = kind_ == Kind::adam || kind_ == Kind::adamw;
  if (m_.defined()) s[adam ? "adam.m" : "momentum"] = m_;
  if (v_.defined()) s["adam.v"] = v_;
  return s;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  auto it = state.find("step");
  MOE_CHECK(it != state.end() && it->second.numel() == 1, "Optimizer::load_state (", name(),
            "): the state has no 'step' entry");
  loaded_steps_ = static_cast<int64_t>(it->second.item());
  loaded_lr_old_ = 0;
  if (kind_ == Kind::nag) {
    auto lr = state.find("lr_old");
    loaded_lr_old_ = lr == state.end() ? 0.0 : lr->second.item();
  }
  if (scalars_.defined())  // in place: a CUDA graph that recorded a step keeps reading these scalars
    scalars_.flat_range(StepSlot::step, 2)
        .copy_from(Tensor::from_vector(std::vector<double>{static_cast<double>(loaded_steps_), loaded_lr_old_},
                                       Shape{2}, Device::cpu()));
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
