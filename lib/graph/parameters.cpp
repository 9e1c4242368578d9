// parameters.h implementation: declaration, group-contiguous layout and deterministic init.
#include "graph/parameters.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tensor/allocator.h"
#include "tensor/philox.h"

namespace moe {

namespace {
constexpr int64_t kAlign = 16;  // elements: 64-byte aligned parameters
int64_t aligned(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint64_t name_hash(const std::string& s) {  // FNV-1a, stable across platforms
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

void run_init(const Init& init, const std::string& name, uint64_t seed, Tensor& out) {
  MOE_CHECK(out.device().is_cpu() && out.dtype() == DType::f32, "run_init: needs an f32 CPU tensor");
  float* p = out.data<float>();
  const int64_t n = out.numel();
  const uint64_t stream = name_hash(name);
  switch (init.kind) {
    case Init::Kind::zeros:
      std::fill(p, p + n, 0.f);
      break;
    case Init::Kind::ones:
      std::fill(p, p + n, 1.f);
      break;
    case Init::Kind::constant:
      std::fill(p, p + n, static_cast<float>(init.a));
      break;
    case Init::Kind::uniform:
      for (int64_t i = 0; i < n; ++i)
        p[i] = static_cast<float>(init.a + (init.b - init.a) * philox_uniform(seed, stream, i));
      break;
    case Init::Kind::normal:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(init.a + init.b * philox_normal(seed, stream, i));
      break;
    case Init::Kind::glorot_uniform: {
      const Shape& s = out.shape();
      const double fan_out = s.ndim() >= 1 ? s[-1] : 1, fan_in = s.ndim() >= 2 ? s[-2] : 1;
      const double r = std::sqrt(6.0 / (fan_in + fan_out));
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(-r + 2 * r * philox_uniform(seed, stream, i));
      break;
    }
    case Init::Kind::values:
      MOE_CHECK(static_cast<int64_t>(init.values.size()) == n, "parameter '", name, "': ", init.values.size(),
                " initial values for shape ", out.shape());
      std::copy(init.values.begin(), init.values.end(), p);
      break;
    case Init::Kind::tensor:
      MOE_CHECK(init.tensor.defined(), "parameter '", name,
                "': its initial values were released when it was allocated");
      MOE_CHECK(
          init.tensor.shape() == out.shape() && init.tensor.dtype() == DType::f32 && init.tensor.device().is_cpu(),
          "parameter '", name, "': initial values of shape ", init.tensor.shape(), " (",
          dtype_name(init.tensor.dtype()), ") for shape ", out.shape(), " (f32 on the CPU needed)");
      out.copy_from(init.tensor);
      break;
  }
}

int ParameterStore::declare(const std::string& name, const Shape& shape, const Init& init, const std::string& group) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    const ParamEntry& e = entries_[static_cast<size_t>(it->second)];
    MOE_CHECK(e.shape == shape, "parameter '", name, "' declared with shape ", shape, " but it has shape ", e.shape);
    return it->second;
  }
  ParamEntry e;
  e.name = name;
  e.group = group;
  e.shape = shape;
  e.init = init;
  entries_.push_back(std::move(e));
  pending_ = true;
  return index_[name] = static_cast<int>(entries_.size() - 1);
}

int ParameterStore::declare_state(const std::string& name, const Shape& shape, const Init& init) {
  const bool is_new = find(name) < 0;
  const int index = declare(name, shape, init, "state");
  ParamEntry& e = entries_[static_cast<size_t>(index)];
  if (!is_new && e.offset < 0) e.group = "state";  // declared by a checkpoint loader, not laid out yet
  e.state = true;
  e.trainable = false;
  return index;
}

int ParameterStore::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

int ParameterStore::must_find(const std::string& name) const {
  const int i = find(name);
  MOE_CHECK(i >= 0, "no parameter named '", name, "'");
  return i;
}

void ParameterStore::allocate() {
  // Order: by group, then by declaration; each group is one contiguous range.
  std::vector<size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return entries_[a].group < entries_[b].group; });
  int64_t total = 0;
  std::vector<int64_t> offsets(entries_.size());
  for (size_t i : order) {
    offsets[i] = total;
    total += aligned(entries_[i].shape.numel());
  }
  // Every element is written once below (each entry, then the padding to its aligned end): no zeroing pass
  // over the whole buffer first (185 MB at a d 512 model's load).
  Tensor host = Tensor::empty(Shape{total}, DType::f32, Device::cpu());
  const Tensor old_host = values_.defined() ? values_.to(Device::cpu()) : Tensor();
  for (size_t i = 0; i < entries_.size(); ++i) {
    ParamEntry& e = entries_[i];
    const int64_t n = e.shape.numel();
    std::fill(host.data<float>() + offsets[i] + n, host.data<float>() + offsets[i] + aligned(n), 0.f);
    Tensor dst = host.flat_range(offsets[i], n).view(e.shape);
    if (e.offset >= 0)
      dst.copy_from(old_host.flat_range(e.offset, n).view(e.shape));
    else
      run_init(e.init, e.name, seed_, dst);
    e.init.tensor = Tensor();  // a loaded checkpoint's tensor: released now that the values are in place
    e.offset = offsets[i];
  }
  try {
    values_ = device_.is_cpu() ? host : host.to(device_);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(detail::concat("allocating the parameters (", total, " values, ",
                                     format_bytes(static_cast<size_t>(total) * 4), "): ", e.what()));
  }
  grads_ = Tensor();  // laid out again at the first use (inference never uses them)
  pending_ = false;
}

const Tensor& ParameterStore::grads() const {
  if (grads_.defined() || !values_.defined()) return grads_;
  try {
    grads_ = Tensor::zeros(values_.shape(), DType::f32, device_);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(detail::concat("allocating the parameters' gradients (", values_.numel(), " values, ",
                                     format_bytes(static_cast<size_t>(values_.numel()) * 4), "): ", e.what()));
  }
  return grads_;
}

Tensor ParameterStore::value(int index) const {
  const ParamEntry& e = entry(index);
  MOE_CHECK(e.offset >= 0, "parameter '", e.name, "' is not allocated yet (run the graph forward first)");
  return values_.flat_range(e.offset, e.shape.numel()).view(e.shape);
}

Tensor ParameterStore::grad(int index) const {
  const ParamEntry& e = entry(index);
  MOE_CHECK(e.offset >= 0, "parameter '", e.name, "' is not allocated yet (run the graph forward first)");
  return grads().flat_range(e.offset, e.shape.numel()).view(e.shape);
}

void ParameterStore::zero_grads() {
  if (grads_.defined()) grads_.zero_();
}

int ParameterStore::set_trainable(const std::function<bool(const ParamEntry&)>& select, bool trainable) {
  int n = 0;
  for (ParamEntry& e : entries_)
    if (!e.state && select(e)) {
      e.trainable = trainable;
      ++n;
    }
  return n;
}

ParameterStore::Ranges ParameterStore::trainable_ranges(const std::function<bool(const ParamEntry&)>& select) const {
  Ranges ranges;
  std::vector<const ParamEntry*> sorted;
  for (const ParamEntry& e : entries_)
    if (e.offset >= 0) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (const ParamEntry* e : sorted) {
    if (!e->trainable || (select && !select(*e))) continue;
    const int64_t begin = e->offset, end = e->offset + aligned(e->shape.numel());
    if (!ranges.empty() && ranges.back().second == begin)
      ranges.back().second = end;
    else
      ranges.emplace_back(begin, end);
  }
  return ranges;
}

int64_t ParameterStore::count() const {
  int64_t n = 0;
  for (const ParamEntry& e : entries_) n += e.state ? 0 : e.shape.numel();
  return n;
}

}  // namespace moe
