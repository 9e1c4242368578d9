// Tensor: a shaped, typed, contiguous view into device memory owned by a reference-counted
// Storage that returns its block to the device's caching allocator. Views (reshape, row ranges)
// share the storage. Math lives in lib/ops; this type only holds and moves bytes.
// Covered by tests/unit/tensor_test.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace moe {

/// A block of device memory from the caching allocator, freed when the last Tensor drops it.
class Storage {
 public:
  Storage(Device device, size_t bytes);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Device device_;
  size_t bytes_;
  void* data_;
};

class Tensor {
 public:
  Tensor() = default;
  /// Uninitialised memory.
  static Tensor empty(const Shape& shape, DType dtype, Device device);
  static Tensor zeros(const Shape& shape, DType dtype, Device device);
  /// Copies host values (converted to `dtype`) to a new tensor on `device`.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = Device::cpu(),
                            DType dtype = dtype_of<T>());
  /// A scalar (shape []) holding `value`.
  static Tensor scalar(double value, DType dtype, Device device);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(storage_->data()) + offset_; }
  /// Typed pointer; checks that T matches the tensor's dtype.
  template <class T>
  T* data() const {
    MOE_CHECK(dtype_of<T>() == dtype_, "tensor of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw());
  }

  /// Same memory, another shape with the same number of elements.
  Tensor view(const Shape& shape) const;
  /// Rows [begin, begin + count) along axis 0, sharing memory.
  Tensor rows(int64_t begin, int64_t count) const;
  /// Elements [begin, begin + count) of the flattened tensor, as a 1-D view.
  Tensor flat_range(int64_t begin, int64_t count) const;

  /// Deep copy to another device (or the same one).
  Tensor to(Device device) const;
  Tensor clone() const { return to(device()); }
  /// Copies the contents of `src` (same shape and dtype, any device) into this tensor.
  void copy_from(const Tensor& src);
  void zero_();

  /// Reads the values to the host, converted to T (float/double/int32_t/int64_t).
  template <class T>
  std::vector<T> to_vector() const;
  /// The single value of a one-element tensor, as double.
  double item() const;

  /// True when both tensors are views of the same storage.
  bool shares_storage(const Tensor& o) const { return storage_ == o.storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;  // bytes
  Shape shape_;
  DType dtype_ = DType::f32;

  /// Host-side conversion helpers behind the templates (implemented in tensor.cpp).
  static void convert_from_host(const void* src, DType src_type, Tensor& dst);
  void convert_to_host(void* dst, DType dst_type) const;
};

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device, DType dtype) {
  MOE_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
            " values for shape ", shape);
  Tensor t = empty(shape, dtype, device);
  convert_from_host(values.data(), dtype_of<T>(), t);
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  convert_to_host(out.data(), dtype_of<T>());
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace moe
