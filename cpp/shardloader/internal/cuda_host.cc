#include "shardloader/internal/cuda_host.h"

#include <dlfcn.h>

#include "absl/base/call_once.h"

namespace shardloader::internal_batch {
namespace {

constexpr unsigned int kCudaHostRegisterDefault = 0;

}  // namespace

const CudaHost* CudaHost::Load() {
  // A runtime already in the process (PyTorch's) first, then any on the
  // library path; the newest names first.
  constexpr const char* kNames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                    "libcudart.so"};
  for (const int mode : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL})
    for (const char* name : kNames) {
      void* library = ::dlopen(name, mode);
      if (library == nullptr) continue;
      using DeviceCountFn = int (*)(int*);
      auto device_count = reinterpret_cast<DeviceCountFn>(::dlsym(library, "cudaGetDeviceCount"));
      void* register_fn = ::dlsym(library, "cudaHostRegister");
      void* unregister_fn = ::dlsym(library, "cudaHostUnregister");
      int count = 0;
      if (device_count != nullptr && register_fn != nullptr && unregister_fn != nullptr &&
          device_count(&count) == 0 && count > 0) {
        // The library stays loaded for the life of the process.
        return new CudaHost(reinterpret_cast<RegisterFn>(register_fn),
                            reinterpret_cast<UnregisterFn>(unregister_fn));
      }
      ::dlclose(library);
    }
  return nullptr;
}

const CudaHost* CudaHost::Get() {
  static absl::once_flag once;
  static const CudaHost* host = nullptr;
  absl::call_once(once, [] { host = Load(); });
  return host;
}

bool CudaHost::Register(void* data, size_t size_bytes) const {
  return register_(data, size_bytes, kCudaHostRegisterDefault) == 0;
}

void CudaHost::Unregister(void* data) const { unregister_(data); }

}  // namespace shardloader::internal_batch
