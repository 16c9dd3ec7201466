#include "shardloader/io/byte_source.h"

#include <algorithm>
#include <array>

#include "shardloader/status.h"

namespace shardloader {

absl::StatusOr<int64_t> ByteSource::Skip(int64_t size) {
  std::array<char, 64 * 1024> scratch;
  int64_t skipped = 0;
  while (skipped < size) {
    const size_t chunk = static_cast<size_t>(std::min<int64_t>(size - skipped, scratch.size()));
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, Read(scratch.data(), chunk));
    if (n == 0) break;
    skipped += static_cast<int64_t>(n);
  }
  return skipped;
}

}  // namespace shardloader
