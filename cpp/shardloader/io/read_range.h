// Range checks for positional reads: whether `size` bytes at `offset` lie
// inside a source of a given size, and the error when they do not.
//
// The check never forms `offset + size`, which overflows int64_t for sizes
// near INT64_MAX (or above it, as a size_t), and a wrapped sum would let a
// read run far past the end of the source.
//
// Thread-safety: pure functions.
#ifndef SHARDLOADER_IO_READ_RANGE_H_
#define SHARDLOADER_IO_READ_RANGE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace shardloader {

// Whether [offset, offset + size) lies inside [0, source_size).
bool RangeInside(int64_t offset, size_t size, int64_t source_size);

// OK when the range lies inside; else DataLoss ("unexpected end of data:
// wanted N bytes at offset O, the shard has S") with `uri` and `offset` as
// context.
absl::Status CheckReadRange(const std::string& uri, int64_t offset, size_t size,
                            int64_t source_size);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_READ_RANGE_H_
