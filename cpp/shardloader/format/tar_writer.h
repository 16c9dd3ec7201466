// TarWriter: writes tar archives of regular files (shards), deterministically.
//
// Each file becomes a POSIX ustar header (magic "ustar\0", version "00",
// mode 0644, uid/gid 0, empty user and group names, a fixed mtime) followed
// by its data, padded to 512 bytes; Finish() appends the two zero blocks that
// end an archive. A name that a ustar header cannot hold (over 100 bytes and
// not splittable into its 155-byte prefix and 100-byte name fields, or not
// ASCII) and a size of 8 GiB or more go into a PAX extended header ('x') with
// `path` and `size` records, as Python's tarfile, GNU tar and Go write and
// read them; a name that is not UTF-8 adds the record `hdrcharset=BINARY`.
// The same files and options always give the same bytes.
//
// Bytes go to an io/byte_sink.h ByteSink: a POSIX file descriptor (Create(fd, ...)) or any
// other implementation. The writer buffers them and hands the sink chunks of
// at least `TarWriterOptions::buffer_size_bytes` (1 MiB by default), except
// for the last one; the data of a large file tops up the buffer and the rest
// goes to the sink directly, without a copy.
//
// Ownership: the writer owns its sink; a file descriptor sink does not own
// (or close) its descriptor. Destroying a writer without Finish() drops the
// buffered bytes and leaves an incomplete archive.
// Thread-safety: thread-compatible.
#ifndef SHARDLOADER_FORMAT_TAR_WRITER_H_
#define SHARDLOADER_FORMAT_TAR_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/io/byte_sink.h"

namespace shardloader {

// Where a TarWriter's bytes go.
struct TarWriterOptions {
  // Modification time of every file, in seconds since the Unix epoch; from
  // 0 to 8^11 - 1 (the ustar field's range).
  int64_t mtime_seconds = 0;
  // Size of the write buffer, in bytes; more than 0.
  size_t buffer_size_bytes = size_t{1} << 20;
};

class TarWriter {
 public:
  // Writes to the file descriptor `fd`, which the writer neither owns nor
  // closes; `uri` names it in error messages. Retries short writes and
  // EINTR. Errors: InvalidArgument for a negative `fd` or bad options.
  static absl::StatusOr<std::unique_ptr<TarWriter>> Create(int fd, std::string uri,
                                                           const TarWriterOptions& options = {});

  // Writes to `sink`. Errors: InvalidArgument for a null sink or bad
  // options.
  static absl::StatusOr<std::unique_ptr<TarWriter>> Create(std::unique_ptr<ByteSink> sink,
                                                           const TarWriterOptions& options = {});

  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // Appends a regular file named `name` (a relative path such as
  // "000123.jpg"; bytes, ideally UTF-8) holding `data`. Errors:
  // InvalidArgument for an empty name, a name with a NUL byte or longer than
  // 65536 bytes (nothing is written then); FailedPrecondition after
  // Finish(); the sink's error, after which every call fails with it.
  absl::Status AddFile(absl::string_view name, absl::string_view data);

  // Ends the archive (two zero blocks) and writes out the buffer. Errors:
  // FailedPrecondition if called twice; the sink's error.
  absl::Status Finish();

  // Bytes of archive produced so far (headers, data, padding, end blocks),
  // including those still buffered; the archive's size after Finish().
  int64_t bytes_written() const { return bytes_written_; }

 private:
  TarWriter(std::unique_ptr<ByteSink> sink, const TarWriterOptions& options);

  // Appends `data` to the archive, through the buffer unless it is large.
  absl::Status Append(absl::string_view data);
  // Appends the zero bytes that pad `size` bytes to a block boundary.
  absl::Status AppendPadding(int64_t size);
  // Appends a header block for a member of type `typeflag`.
  absl::Status AppendHeader(absl::string_view name_field, absl::string_view prefix_field,
                            int64_t size, char typeflag);
  // Hands the buffer to the sink.
  absl::Status Flush();

  std::unique_ptr<ByteSink> sink_;
  TarWriterOptions options_;
  std::string buffer_;
  int64_t bytes_written_ = 0;
  absl::Status status_;  // sticky error of the sink
  bool finished_ = false;
};

}  // namespace shardloader

#endif  // SHARDLOADER_FORMAT_TAR_WRITER_H_
