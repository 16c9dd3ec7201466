#include "shardloader/internal/stream_copy.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace shardloader::internal_batch {
namespace {

TEST(StreamCopyTest, CopiesExactlyTheBytesAtEveryAlignment) {
  std::vector<uint8_t> source(20000);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 131 + 7);
  // Sizes around the streaming threshold and the 64-byte loop, at
  // destination and source offsets that cover every alignment mod 16.
  for (const size_t size : {0, 1, 15, 63, 64, 4095, 4096, 4097, 4159, 12345, 19000}) {
    for (size_t dst_offset = 0; dst_offset < 17; dst_offset += 3) {
      for (const size_t src_offset : {0, 1, 9, 16}) {
        std::vector<uint8_t> destination(size + 64, 0xAB);
        StreamCopy(destination.data() + dst_offset, source.data() + src_offset, size);
        for (size_t i = 0; i < destination.size(); ++i) {
          const bool inside = i >= dst_offset && i < dst_offset + size;
          const uint8_t expected = inside ? source[src_offset + i - dst_offset] : uint8_t{0xAB};
          ASSERT_EQ(destination[i], expected) << "size " << size << ", dst_offset " << dst_offset
                                              << ", src_offset " << src_offset << ", byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace shardloader::internal_batch
