// tensor.h implementation: storage lifetime, views, copies between devices and dtype conversion
// on the host (device-side casts are the `cast` op in lib/ops/cast.*).
#include "tensor/tensor.h"

#include <cstring>

#include "tensor/allocator.h"
#include "tensor/cuda_runtime.h"

namespace moe {

Storage::Storage(Device device, size_t bytes)
    : device_(device), bytes_(bytes), data_(allocator_for(device).allocate(bytes)) {}

Storage::~Storage() { allocator_for(device_).deallocate(data_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(device, t.bytes());
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.zero_();
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, Device device) {
  return from_vector(std::vector<double>{value}, Shape{}, device, dtype);
}

Tensor Tensor::view(const Shape& shape) const {
  MOE_CHECK(shape.numel() == numel(), "view: cannot view a tensor of shape ", shape_, " as ", shape);
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  MOE_CHECK(shape_.ndim() >= 1 && begin >= 0 && count >= 0 && begin + count <= shape_[0], "rows: range [", begin,
            ", ", begin + count, ") out of bounds for shape ", shape_);
  Tensor t = *this;
  t.shape_ = shape_.with(0, count);
  t.offset_ += static_cast<size_t>(begin * shape_.inner(0)) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::flat_range(int64_t begin, int64_t count) const {
  MOE_CHECK(begin >= 0 && count >= 0 && begin + count <= numel(), "flat_range: [", begin, ", ", begin + count,
            ") out of bounds for ", numel(), " elements");
  Tensor t = *this;
  t.shape_ = Shape{count};
  t.offset_ += static_cast<size_t>(begin) * dtype_size(dtype_);
  return t;
}

namespace {
void copy_bytes(void* dst, Device dd, const void* src, Device sd, size_t n) {
  if (n == 0) return;
  if (dd.is_cpu() && sd.is_cpu()) std::memcpy(dst, src, n);
  else if (dd.is_cuda() && sd.is_cpu()) cuda::copy_host_to_device(dst, src, n, dd.index);
  else if (dd.is_cpu() && sd.is_cuda()) cuda::copy_device_to_host(dst, src, n, sd.index);
  else {
    MOE_CHECK(dd.index == sd.index, "copy between GPUs ", sd, " and ", dd, " is not supported; go through the host");
    cuda::copy_device_to_device(dst, src, n, dd.index);
  }
}

template <class T>
double load(const void* p, int64_t i) {
  const T v = static_cast<const T*>(p)[i];
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) return static_cast<float>(v);
  else return static_cast<double>(v);
}

double load_any(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return load<float>(p, i);
    case DType::f64: return load<double>(p, i);
    case DType::bf16: return load<bf16>(p, i);
    case DType::f16: return load<f16>(p, i);
    case DType::i32: return load<int32_t>(p, i);
    case DType::i64: return load<int64_t>(p, i);
    case DType::u8: return load<uint8_t>(p, i);
  }
  return 0;
}

void store_any(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(p)[i] = v; break;
    case DType::bf16: static_cast<bf16*>(p)[i] = bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<f16*>(p)[i] = f16(static_cast<float>(v)); break;
    case DType::i32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::i64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::u8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
  }
}

void convert_host(const void* src, DType st, void* dst, DType dt, int64_t n) {
  if (st == dt) {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(st));  // empty: src may be null
    return;
  }
  // Integers pass through double, exact up to 2^53.
  for (int64_t i = 0; i < n; ++i) store_any(dst, dt, i, load_any(src, st, i));
}
}  // namespace

void Tensor::convert_from_host(const void* src, DType src_type, Tensor& dst) {
  if (dst.device().is_cpu()) {
    convert_host(src, src_type, dst.raw(), dst.dtype_, dst.numel());
    return;
  }
  Tensor staging = empty(dst.shape_, dst.dtype_, Device::cpu());
  convert_host(src, src_type, staging.raw(), dst.dtype_, dst.numel());
  dst.copy_from(staging);
}

void Tensor::convert_to_host(void* dst, DType dst_type) const {
  if (device().is_cpu()) {
    convert_host(raw(), dtype_, dst, dst_type, numel());
    return;
  }
  Tensor staging = to(Device::cpu());
  convert_host(staging.raw(), dtype_, dst, dst_type, numel());
}

Tensor Tensor::to(Device device) const {
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  MOE_CHECK(src.shape_.numel() == numel() && src.dtype_ == dtype_, "copy_from: source ", src.shape_, " ",
            dtype_name(src.dtype_), " does not match destination ", shape_, " ", dtype_name(dtype_));
  copy_bytes(raw(), device(), src.raw(), src.device(), bytes());
}

void Tensor::zero_() {
  if (device().is_cpu()) std::memset(raw(), 0, bytes());
  else cuda::memset_zero(raw(), bytes(), device().index);
}

double Tensor::item() const {
  MOE_CHECK(numel() == 1, "item: tensor of shape ", shape_, " has ", numel(), " elements, not 1");
  return to_vector<double>()[0];
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  os << "Tensor(" << t.shape() << ", " << dtype_name(t.dtype()) << ", " << t.device() << ")";
  return os;
}

}  // namespace moe
