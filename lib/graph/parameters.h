// ParameterStore: every parameter of a model and its gradient, as views into two flat f32
// buffers (so a gradient all-reduce, a norm or an optimizer step is one call over one buffer); the
// gradient buffer is made at its first use, so that decoding holds only the values.
// Parameters are declared by name with a shape, an initialiser and a group ("gate", "embed", ...);
// allocate() lays them out with each group contiguous (so an optimizer or a fine-tuning mode can
// select a group as a few ranges), keeps the values of parameters that already existed and
// initialises new ones deterministically from (seed, name), independent of declaration order.
// State entries (declare_state) live in the same buffers but are never trainable: persistent
// statistics such as batch-norm running means, saved in checkpoints with the parameters.
// Covered by tests/graph/graph_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

struct Init {
  enum class Kind { zeros, ones, constant, uniform, normal, glorot_uniform, values, tensor };
  Kind kind = Kind::zeros;
  double a = 0, b = 0;
  std::vector<float> values;
  Tensor tensor;  // Kind::tensor: the values (f32, CPU), shared, not copied; released by allocate()

  static Init zeros() { return {Kind::zeros, 0, 0, {}, {}}; }
  static Init ones() { return {Kind::ones, 0, 0, {}, {}}; }
  static Init constant(double v) { return {Kind::constant, v, 0, {}, {}}; }
  static Init uniform(double lo, double hi) { return {Kind::uniform, lo, hi, {}, {}}; }
  static Init normal(double mean, double stddev) { return {Kind::normal, mean, stddev, {}, {}}; }
  /// U(-s, s) with s = sqrt(6 / (fan_in + fan_out)), fans from the last two axes.
  static Init glorot_uniform() { return {Kind::glorot_uniform, 0, 0, {}, {}}; }
  static Init from_values(std::vector<float> v) { return {Kind::values, 0, 0, std::move(v), {}}; }
  /// The values of an f32 CPU tensor (a loaded checkpoint's): allocate() copies them once, with no copy before.
  static Init from_tensor(Tensor t) { return {Kind::tensor, 0, 0, {}, std::move(t)}; }
};

/// Fills `out` (f32, CPU) according to `init`, with random numbers from (seed, name).
void run_init(const Init& init, const std::string& name, uint64_t seed, Tensor& out);

struct ParamEntry {
  std::string name;
  std::string group;
  Shape shape;
  Init init;
  int64_t offset = -1;  // element offset in the flat buffers; -1 until allocated
  bool trainable = true;
  bool state = false;  // persistent non-trainable state (set_trainable never selects it)
};

class ParameterStore {
 public:
  explicit ParameterStore(Device device, uint64_t seed = 1) : device_(device), seed_(seed) {}

  /// Index of parameter `name`; declares it on first use. A second declaration must agree on shape.
  int declare(const std::string& name, const Shape& shape, const Init& init, const std::string& group = "");
  /// Declares (or marks, e.g. after loading a checkpoint) `name` as state: group "state" when new,
  /// never trainable, updated in place by the ops that own it.
  int declare_state(const std::string& name, const Shape& shape, const Init& init);
  int find(const std::string& name) const;
  bool has_pending() const { return pending_; }
  /// Lays out (or re-lays out) all declared parameters; see the file comment.
  void allocate();

  Tensor value(int index) const;
  Tensor grad(int index) const;
  Tensor value(const std::string& name) const { return value(must_find(name)); }
  Tensor grad(const std::string& name) const { return grad(must_find(name)); }
  /// The flat buffers (padded: each parameter starts at a multiple of 16 elements).
  const Tensor& values() const { return values_; }
  /// (allocated, zero, at the first call after allocate(): inference never pays for them)
  const Tensor& grads() const;
  void zero_grads();

  const std::vector<ParamEntry>& entries() const { return entries_; }
  const ParamEntry& entry(int index) const { return entries_.at(static_cast<size_t>(index)); }
  /// Sets `trainable` on every parameter (not state) for which `select(entry)` is true; returns how many.
  int set_trainable(const std::function<bool(const ParamEntry&)>& select, bool trainable);
  using Ranges = std::vector<std::pair<int64_t, int64_t>>;
  /// [begin, end) element ranges of the flat buffers that hold trainable parameters (merged); with
  /// `select`, only those of the trainable parameters it accepts (e.g. one group).
  Ranges trainable_ranges(const std::function<bool(const ParamEntry&)>& select = {}) const;
  /// Number of parameter elements (without padding; state entries are not parameters).
  int64_t count() const;
  Device device() const { return device_; }
  uint64_t seed() const { return seed_; }

 private:
  int must_find(const std::string& name) const;

  Device device_;
  uint64_t seed_;
  std::vector<ParamEntry> entries_;
  std::map<std::string, int> index_;
  Tensor values_;
  mutable Tensor grads_;  // grads() lays them out on first use
  bool pending_ = false;
};

}  // namespace moe
