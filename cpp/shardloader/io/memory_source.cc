#include "shardloader/io/memory_source.h"

#include <algorithm>
#include <cstring>

namespace shardloader {

absl::StatusOr<size_t> MemorySource::Read(char* dst, size_t size) {
  const size_t n = std::min(size, bytes_.size() - pos_);
  std::memcpy(dst, bytes_.data() + pos_, n);
  pos_ += n;
  return n;
}

absl::StatusOr<int64_t> MemorySource::Skip(int64_t size) {
  const size_t n = std::min(static_cast<size_t>(size), bytes_.size() - pos_);
  pos_ += n;
  return static_cast<int64_t>(n);
}

}  // namespace shardloader
