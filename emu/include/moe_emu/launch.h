// CUDA emulator (emu/README.md): what cu_rewrite turns CUDA's kernel syntax into.
//   kernel<<<grid, block, smem, stream>>>(args)   ->  moe_emu::launch(kernel, grid, block, smem, stream)(args)
//   __shared__ T a[N];                            ->  auto& a = moe_emu::shared_variable<T[N]>(&key, align, "a");
//   extern __shared__ T s[];                      ->  T* s = moe_emu::dynamic_shared<T>(align);
//   first statement of a __global__ body          ->  MOE_EMU_KERNEL_ENTRY(launch bound)
// The arguments are converted to the kernel's parameter types once per launch (as CUDA copies them)
// and kept with the queued launch (emu/runtime/queue.h: it runs when the host synchronises); every
// emulated thread then calls the kernel with its own copies.
#pragma once
#include <cstddef>
#include <memory>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace moe_emu {

struct LaunchConfig {
  dim3 grid, block;
  size_t dynamic_shared = 0;
  cudaStream_t stream = nullptr;
  const void* kernel = nullptr;
  std::source_location site;
};

/// Checks the configuration (errors as CUDA gives them, at once) and queues the grid on its stream;
/// `run(ctx)` calls the kernel in the calling emulated thread. `params` [params, params + bytes), owned
/// by ctx, is the launch's argument copy (readable by kernels).
void launch_kernel(const LaunchConfig& config, void (*run)(void*), std::shared_ptr<void> ctx, const void* params,
                   size_t bytes);

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  LaunchConfig config;

  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
    struct Call {
      void (*kernel)(P...);
      std::tuple<std::decay_t<P>...> params;
    };
    auto call = std::make_shared<Call>(Call{kernel, std::tuple<std::decay_t<P>...>(static_cast<P>(std::forward<A>(args))...)});
    const void* params = call.get();
    launch_kernel(
        config, [](void* c) { std::apply(static_cast<Call*>(c)->kernel, static_cast<Call*>(c)->params); },
        std::move(call), params, sizeof(Call));
  }
};

template <class... P>
inline Launcher<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t dynamic_shared = 0,
                             cudaStream_t stream = nullptr, std::source_location site = std::source_location::current()) {
  return Launcher<P...>{kernel, LaunchConfig{grid, block, dynamic_shared, stream, reinterpret_cast<const void*>(kernel), site}};
}

template <class T>
inline T& shared_variable(SharedKey* key, size_t align, const char* name) {
  return *static_cast<T*>(shared_variable_raw(key, sizeof(T), align ? align : alignof(T), name));
}
template <class T>
inline T* dynamic_shared(size_t align) {
  return static_cast<T*>(dynamic_shared_raw(align ? align : alignof(T)));
}

/// One per kernel instantiation (Tag is a class local to the kernel's body, which knows the body's
/// source file), registered at start-up.
template <class Tag>
struct KernelSite {
  static inline KernelRecord* const record = register_kernel(typeid(Tag).name(), Tag::file());
};

}  // namespace moe_emu

#define MOE_EMU_KERNEL_ENTRY(bound)                              \
  struct moe_emu_kernel_tag {                                    \
    static const char* file() { return __FILE__; }              \
  };                                                             \
  ::moe_emu::kernel_entry(&::moe_emu::KernelSite<moe_emu_kernel_tag>::record, static_cast<unsigned>(bound))
