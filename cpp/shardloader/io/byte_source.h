// ByteSource: a forward-only stream of a shard's bytes.
//
// Every storage backend (local files, http(s)://, s3://, the cache: see
// io/open/open_source.h) implements this one interface, and every format reader consumes it, so
// readers never need to seek. Sources buffer internally: callers may read a few bytes at a time.
//
// Ownership: the creator owns the source. Thread-safety: thread-compatible
// (one thread at a time); distinct sources are independent.
#ifndef SHARDLOADER_IO_BYTE_SOURCE_H_
#define SHARDLOADER_IO_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace shardloader {

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The URI or path this source reads, for error messages.
  virtual const std::string& uri() const = 0;

  // Reads up to `size` bytes into `dst`. Returns the number of bytes read,
  // which is 0 only at the end of the stream and may be less than `size`.
  // Errors: NotFound, PermissionDenied, Unavailable, DataLoss, with the URI.
  virtual absl::StatusOr<size_t> Read(char* dst, size_t size) = 0;

  // Skips `size` bytes forward. Returns the number of bytes skipped, less
  // than `size` only at the end of the stream. The default reads and
  // discards; seekable sources override it.
  virtual absl::StatusOr<int64_t> Skip(int64_t size);

  // Number of bytes consumed so far (read or skipped) from the start.
  virtual int64_t position() const = 0;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_BYTE_SOURCE_H_
