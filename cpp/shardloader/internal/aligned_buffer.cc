#include "shardloader/internal/aligned_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "shardloader/internal/cuda_host.h"

namespace shardloader::internal_batch {

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
  const size_t rounded =
      (wanted + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* memory = std::aligned_alloc(kBufferAlignment, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  Free();
  data_ = static_cast<uint8_t*>(memory);
  capacity_ = rounded;
  if (pin_) {
    const CudaHost* host = CudaHost::Get();
    pinned_ = host != nullptr && host->Register(data_, capacity_);
  }
}

}  // namespace shardloader::internal_batch
