// ByteSink: where written bytes go, in order (the write-side twin of
// ByteSource). Writers of formats (format/tar_writer.h) write to a ByteSink;
// storage backends implement it (io/output/output_file.h writes local files
// through a temporary name and S3 objects as multipart uploads).
//
// Ownership: whoever creates a sink owns it. Thread-safety: thread-compatible.
#ifndef SHARDLOADER_IO_BYTE_SINK_H_
#define SHARDLOADER_IO_BYTE_SINK_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shardloader {

class ByteSink {
 public:
  virtual ~ByteSink() = default;

  // Writes all of `data`, or fails. Errors carry their own context (the
  // destination's URI and offset).
  virtual absl::Status Write(absl::string_view data) = 0;
};

// A sink that forwards to `target`, which the caller keeps owning (so a
// writer that owns its sink can write to a file that is committed
// afterwards).
std::unique_ptr<ByteSink> ForwardingSink(ByteSink* target);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_BYTE_SINK_H_
