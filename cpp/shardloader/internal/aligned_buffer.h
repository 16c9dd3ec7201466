// AlignedBuffer: a growable, page-aligned byte buffer that keeps its
// capacity, so reuse allocates nothing. Page alignment lets batch memory be
// page-locked (pinned) for CUDA copies.
//
// Thread-safety: thread-compatible.
#ifndef SHARDLOADER_INTERNAL_ALIGNED_BUFFER_H_
#define SHARDLOADER_INTERNAL_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <utility>

namespace shardloader::internal_batch {

inline constexpr size_t kBufferAlignment = 4096;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }

  // Ensures room for `size_bytes`; contents are not preserved on growth.
  // Grows geometrically so a slowly rising demand reallocates rarely.
  void Reserve(size_t size_bytes);

  uint8_t* data() { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace shardloader::internal_batch

#endif  // SHARDLOADER_INTERNAL_ALIGNED_BUFFER_H_
