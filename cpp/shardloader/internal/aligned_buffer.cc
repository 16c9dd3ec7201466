#include "shardloader/internal/aligned_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace shardloader::internal_batch {

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

void AlignedBuffer::Reserve(size_t size_bytes) {
  if (size_bytes <= capacity_) return;
  const size_t wanted = std::max(size_bytes, capacity_ + capacity_ / 2);
  const size_t rounded =
      (wanted + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* memory = std::aligned_alloc(kBufferAlignment, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  std::free(data_);
  data_ = static_cast<uint8_t*>(memory);
  capacity_ = rounded;
}

}  // namespace shardloader::internal_batch
