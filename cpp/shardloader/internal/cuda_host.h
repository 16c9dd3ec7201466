// CudaHost: page-locks (pins) host memory with the CUDA runtime when one is
// present, so that host-to-device copies of batches are fast and can overlap
// with compute (`tensor.cuda(non_blocking=True)`).
//
// The CUDA runtime is loaded at run time with dlopen (libcudart.so and its
// versioned names; the copy PyTorch already loaded is found first), so
// shardloader has no CUDA build dependency. Without a runtime or a device,
// Get() returns nullptr and batches use ordinary memory.
//
// Thread-safety: thread-safe; the runtime is looked up once.
#ifndef SHARDLOADER_INTERNAL_CUDA_HOST_H_
#define SHARDLOADER_INTERNAL_CUDA_HOST_H_

#include <cstddef>

namespace shardloader::internal_batch {

class CudaHost {
 public:
  // The process's CUDA runtime if it has one and at least one device;
  // nullptr otherwise.
  static const CudaHost* Get();

  // cudaHostRegister(data, size_bytes, cudaHostRegisterDefault); false if
  // the runtime refused (the memory then stays ordinary).
  bool Register(void* data, size_t size_bytes) const;
  // cudaHostUnregister(data), for memory Register() accepted.
  void Unregister(void* data) const;

 private:
  using RegisterFn = int (*)(void*, size_t, unsigned int);
  using UnregisterFn = int (*)(void*);
  static const CudaHost* Load();
  CudaHost(RegisterFn register_fn, UnregisterFn unregister_fn)
      : register_(register_fn), unregister_(unregister_fn) {}

  RegisterFn register_;
  UnregisterFn unregister_;
};

}  // namespace shardloader::internal_batch

#endif  // SHARDLOADER_INTERNAL_CUDA_HOST_H_
