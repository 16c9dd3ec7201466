// AlignedBuffer: a growable, page-aligned byte buffer that keeps its
// capacity, so reuse allocates nothing. Buffers of 2 MiB or more are
// 2 MiB-aligned and advised to use transparent huge pages (fewer TLB misses
// while a batch is filled). A buffer created with `pin` is
// page-locked (pinned) with the CUDA runtime when one is present (see
// cuda_host.h), for fast, asynchronous host-to-device copies.
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
  explicit AlignedBuffer(bool pin = false) : pin_(pin) {}
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        capacity_(std::exchange(other.capacity_, 0)),
        pin_(other.pin_),
        pinned_(std::exchange(other.pinned_, false)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
    std::swap(pin_, other.pin_);
    std::swap(pinned_, other.pinned_);
    return *this;
  }

  // Ensures room for `size_bytes`; contents are not preserved on growth.
  // Grows geometrically so a slowly rising demand reallocates rarely.
  void Reserve(size_t size_bytes);

  uint8_t* data() { return data_; }
  size_t capacity() const { return capacity_; }
  // Whether the memory is page-locked with CUDA.
  bool pinned() const { return pinned_; }

 private:
  void Free();

  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
  bool pin_;
  bool pinned_ = false;
};

}  // namespace shardloader::internal_batch

#endif  // SHARDLOADER_INTERNAL_ALIGNED_BUFFER_H_
