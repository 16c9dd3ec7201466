#include "shardloader/internal/stream_copy.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shardloader::internal_batch {
namespace {

constexpr size_t kMinStreamedBytes = 4096;

}  // namespace

void StreamCopy(uint8_t* dst, const void* src, size_t size) {
  if (size == 0) return;
  const auto* in = static_cast<const uint8_t*>(src);
#if defined(__SSE2__)
  if (size >= kMinStreamedBytes) {
    // Up to the first 16-byte aligned destination byte with memcpy.
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, in, head);
    dst += head;
    in += head;
    size -= head;
    size_t i = 0;
    for (; i + 64 <= size; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    _mm_sfence();
    std::memcpy(dst + i, in + i, size - i);
    return;
  }
#endif
  std::memcpy(dst, in, size);
}

}  // namespace shardloader::internal_batch
