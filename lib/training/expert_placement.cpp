// expert_placement.h implementation. Covered by tests/dist/data_parallel_test.cpp.
#include "training/expert_placement.h"

#include "common/error.h"
#include "layers/moe_ffn_expert_parallel.h"

namespace moe {

namespace {
Shape times_rows(const Shape& s, int64_t k) {
  std::vector<int64_t> v = s.vec();
  v[0] *= k;
  return Shape(v);
}
}  // namespace

bool ExpertPlacement::is_local(const ParamEntry& e) { return e.group == kLocalExpertGroup; }

ExpertPlacement::ExpertPlacement(dist::Communicator& comm, const ParameterStore& store)
    : comm_(comm), store_(store), full_(std::make_unique<ParameterStore>(Device::cpu(), store.seed())) {
  for (size_t i = 0; i < store.entries().size(); ++i) {
    const ParamEntry& e = store.entries()[i];
    if (e.state) {
      full_->declare_state(e.name, e.shape, e.init);
      continue;
    }
    const bool local = is_local(e);
    full_->declare(e.name, local ? times_rows(e.shape, comm.world()) : e.shape, e.init, e.group);
    if (!local) continue;
    locals_.push_back(static_cast<int>(i));
  }
  if (!active()) return;
  full_->allocate();
  ranges_ = store.trainable_ranges([](const ParamEntry& e) { return is_local(e); });
}

void ExpertPlacement::initialise(ParameterStore& store) const {
  for (int i : locals_) {
    const ParamEntry& e = store.entry(i);
    Tensor whole = Tensor::zeros(times_rows(e.shape, comm_.world()), DType::f32, Device::cpu());
    run_init(e.init, e.name, store.seed(), whole);
    store.value(i).copy_from(whole.rows(e.shape[0] * comm_.rank(), e.shape[0]));
  }
}

Tensor ExpertPlacement::to_full(const Tensor& flat) const {
  MOE_CHECK(flat.numel() == store_.values().numel(), "ExpertPlacement::to_full: ", flat.numel(),
            " elements, the store has ", store_.values().numel());
  Tensor out = Tensor::zeros(Shape{full_numel()}, DType::f32, flat.device());
  for (size_t i = 0; i < store_.entries().size(); ++i) {
    const ParamEntry& e = store_.entries()[i];
    const int64_t n = e.shape.numel(), at = full_->entries()[i].offset;
    if (is_local(e))
      comm_.all_gather(flat.flat_range(e.offset, n), out.flat_range(at, n * comm_.world()));
    else
      out.flat_range(at, n).copy_from(flat.flat_range(e.offset, n));
  }
  return out;
}

Tensor ExpertPlacement::from_full(const Tensor& full) const {
  MOE_CHECK(full.numel() == full_numel(), "ExpertPlacement::from_full: ", full.numel(), " elements, the full layout has ",
            full_numel());
  Tensor out = Tensor::zeros(Shape{store_.values().numel()}, DType::f32, full.device());
  for (size_t i = 0; i < store_.entries().size(); ++i) {
    const ParamEntry& e = store_.entries()[i];
    const int64_t n = e.shape.numel(), at = full_->entries()[i].offset + (is_local(e) ? n * comm_.rank() : 0);
    out.flat_range(e.offset, n).copy_from(full.flat_range(at, n));
  }
  return out;
}

const ParameterStore& ExpertPlacement::gathered() {
  Tensor(full_->values()).copy_from(to_full(store_.values()).to(Device::cpu()));
  return *full_;
}

Tensor ExpertPlacement::local_part(const ParamEntry& e, const Tensor& full) const {
  if (!is_local(e)) return full;
  MOE_CHECK(full.shape() == times_rows(e.shape, comm_.world()), "parameter '", e.name, "' is ", full.shape(),
            "; with ", comm_.world(), " ranks of ", e.shape[0], " experts it must be ", times_rows(e.shape, comm_.world()));
  return full.rows(e.shape[0] * comm_.rank(), e.shape[0]);
}

}  // namespace moe
