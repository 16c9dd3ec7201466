#include "shardloader/internal/aligned_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "shardloader/internal/cuda_host.h"

namespace shardloader::internal_batch {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace

AlignedBuffer::~AlignedBuffer() { Free(); }

void AlignedBuffer::Free() {
  if (pinned_) CudaHost::Get()->Unregister(data_);
  std::free(data_);
  data_ = nullptr;
  pinned_ = false;
}

void AlignedBuffer::Reserve(size_t size_bytes) {
  if (size_bytes <= capacity_) return;
  const size_t wanted = std::max(size_bytes, capacity_ + capacity_ / 2);
  // Buffers of 2 MiB or more are aligned to 2 MiB and backed by transparent
  // huge pages where the system allows it (as NumPy does for large arrays):
  // filling a batch then costs far fewer TLB misses.
  const size_t alignment = wanted >= kHugePageBytes ? kHugePageBytes : kBufferAlignment;
  const size_t rounded = (wanted + alignment - 1) / alignment * alignment;
  void* memory = std::aligned_alloc(alignment, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  if (alignment == kHugePageBytes) ::madvise(memory, rounded, MADV_HUGEPAGE);
  Free();
  data_ = static_cast<uint8_t*>(memory);
  capacity_ = rounded;
  if (pin_) {
    const CudaHost* host = CudaHost::Get();
    pinned_ = host != nullptr && host->Register(data_, capacity_);
  }
}

}  // namespace shardloader::internal_batch
