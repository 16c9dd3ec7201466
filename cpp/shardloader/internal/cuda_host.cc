#include "shardloader/internal/cuda_host.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>

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

namespace {

absl::once_flag load_once;
const CudaHost* loaded = nullptr;
std::atomic<bool> load_started{false};

// fork(): a child must not inherit load_once mid-way (held, by a thread the
// child does not have, it would wait for ever), so a fork waits for a
// lookup in progress. One never started is not started here.
void FinishLoadBeforeFork() {
  if (load_started.load()) (void)CudaHost::Get();
}
[[maybe_unused]] const bool fork_handler_registered =
    pthread_atfork(&FinishLoadBeforeFork, nullptr, nullptr) == 0;

}  // namespace

const CudaHost* CudaHost::Get() {
  load_started.store(true);
  absl::call_once(load_once, [] { loaded = Load(); });
  return loaded;
}

bool CudaHost::Register(void* data, size_t size_bytes) const {
  return register_(data, size_bytes, kCudaHostRegisterDefault) == 0;
}

void CudaHost::Unregister(void* data) const { unregister_(data); }

}  // namespace shardloader::internal_batch
