// OutputFile: a file being written that appears under its final name only
// once complete, on a local file system or in S3.
//
// Local paths: the bytes go to ".<name>.partial-<pid>" in the same
// directory; Commit() fsyncs and renames it into place. s3://bucket/key: the
// bytes are buffered into parts of SourceOptions::part_size_bytes (at least
// 5 MiB, S3's smallest part) and sent as an S3 multipart upload
// (CreateMultipartUpload, UploadPart, CompleteMultipartUpload; "Uploading and
// copying objects using multipart upload", AWS S3 User Guide), so the object
// exists only after Commit(); a file shorter than one part is one PutObject
// at Commit(). Abort(), or destruction without Commit(), removes the
// temporary file or aborts the upload.
//
// Every byte written is counted and hashed (SHA-256) on the way.
// Ownership: owns its file descriptor or upload. Thread-safety:
// thread-compatible.
#ifndef SHARDLOADER_IO_OUTPUT_OUTPUT_FILE_H_
#define SHARDLOADER_IO_OUTPUT_OUTPUT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/internal/sha256.h"
#include "shardloader/io/byte_sink.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

class OutputFile : public ByteSink {
 public:
  ~OutputFile() override = default;

  // Appends `data`. Errors: the destination's I/O errors, naming its URI.
  absl::Status Write(absl::string_view data) final;

  // Makes the file appear under its final name. Errors: I/O errors; S3
  // errors as S3Client::Call(). Call once.
  virtual absl::Status Commit() = 0;

  // Discards what was written; no error is reported.
  virtual void Abort() = 0;

  const std::string& uri() const { return uri_; }
  int64_t size_bytes() const { return size_bytes_; }
  // Lower-case hex SHA-256 of all bytes written; call after the last Write().
  std::string Sha256HexDigest();

 protected:
  explicit OutputFile(std::string uri) : uri_(std::move(uri)) {}
  virtual absl::Status Append(absl::string_view data) = 0;

 private:
  std::string uri_;
  int64_t size_bytes_ = 0;
  Sha256Hasher hasher_;
};

// The output for local file `path` (written as ".<name>.partial-<pid>",
// renamed on Commit()). Errors: NotFound (no such directory),
// PermissionDenied, each naming the path.
absl::StatusOr<std::unique_ptr<OutputFile>> CreateLocalOutputFile(const std::string& path);

// The output for "s3://bucket/key" (a multipart upload), whose requests go
// through `transport`. Errors: InvalidArgument for a malformed URI, S3
// credential errors as S3Client::Create().
absl::StatusOr<std::unique_ptr<OutputFile>> CreateS3OutputFile(
    const std::string& uri, const SourceOptions& options = {},
    std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

}  // namespace shardloader

#endif  // SHARDLOADER_IO_OUTPUT_OUTPUT_FILE_H_
