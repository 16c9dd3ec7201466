// OpenSource: opens a shard URI with the matching storage backend.
//
// Supported now: local paths and file:// URIs. http(s):// and s3:// URIs are
// recognised and refused with Unimplemented until remote sources land.
//
// Thread-safety: safe to call from many threads.
#ifndef SHARDLOADER_IO_OPEN_SOURCE_H_
#define SHARDLOADER_IO_OPEN_SOURCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shardloader/io/byte_source.h"

namespace shardloader {

struct SourceOptions {
  size_t block_size_bytes = size_t{1} << 20;  // read size for local files
  // Pipes and FIFOs opened for positional reads are held in memory whole;
  // longer ones are refused.
  int64_t max_unseekable_bytes = int64_t{1} << 30;
};

// The local path a URI names (a plain path or file://). Errors:
// Unimplemented for remote schemes not built in, InvalidArgument for an
// unknown scheme, each naming the URI.
absl::StatusOr<std::string> LocalPathOf(const std::string& uri);

// Errors: NotFound, PermissionDenied, InvalidArgument (unknown scheme),
// Unimplemented (remote schemes), each naming the URI.
absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(
    const std::string& uri, const SourceOptions& options = {});

}  // namespace shardloader

#endif  // SHARDLOADER_IO_OPEN_SOURCE_H_
