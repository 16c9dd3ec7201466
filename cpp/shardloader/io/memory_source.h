// MemorySource: a ByteSource over bytes held in memory (tests, small inputs).
//
// Ownership: owns a copy of the bytes. Thread-safety: thread-compatible.
#ifndef SHARDLOADER_IO_MEMORY_SOURCE_H_
#define SHARDLOADER_IO_MEMORY_SOURCE_H_

#include <string>

#include "shardloader/io/byte_source.h"

namespace shardloader {

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string uri, std::string bytes)
      : uri_(std::move(uri)), bytes_(std::move(bytes)) {}

  const std::string& uri() const override { return uri_; }
  absl::StatusOr<size_t> Read(char* dst, size_t size) override;
  absl::StatusOr<int64_t> Skip(int64_t size) override;
  int64_t position() const override { return static_cast<int64_t>(pos_); }

 private:
  std::string uri_;
  std::string bytes_;
  size_t pos_ = 0;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_MEMORY_SOURCE_H_
