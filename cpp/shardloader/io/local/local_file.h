// LocalFileSource: a ByteSource over a file on a local or mounted file system
// (ext4, NFS, CephFS, ...).
//
// Reads in large blocks (`block_size_bytes`, 1 MiB by default) with
// posix_fadvise(SEQUENTIAL) so the kernel reads ahead; small reads are served
// from the block buffer, and skips past the buffer become lseek calls.
//
// Ownership: owns its file descriptor and buffer. Thread-safety:
// thread-compatible.
#ifndef SHARDLOADER_IO_LOCAL_LOCAL_FILE_H_
#define SHARDLOADER_IO_LOCAL_LOCAL_FILE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardloader/io/byte_source.h"

namespace shardloader {

inline constexpr size_t kDefaultBlockSizeBytes = size_t{1} << 20;

// A local file opened for reading (read-only, close-on-exec).
struct OpenedFile {
  int fd = -1;             // owned by the caller
  int64_t size_bytes = 0;  // at open time; 0 for pipes and FIFOs
  bool regular = false;    // a regular file (seekable), not a pipe or FIFO
};

// Opens `path` with O_RDONLY | O_CLOEXEC | `extra_flags`. Errors: NotFound
// (ENOENT), PermissionDenied, InvalidArgument (a directory), each naming the
// path.
absl::StatusOr<OpenedFile> OpenLocalFile(const std::string& path, int extra_flags = 0);

class LocalFileSource final : public ByteSource {
 public:
  // Opens `path`. Errors: NotFound (ENOENT), PermissionDenied, InvalidArgument
  // (a directory), with the path in the message and payload.
  static absl::StatusOr<std::unique_ptr<LocalFileSource>> Open(
      const std::string& path, size_t block_size_bytes = kDefaultBlockSizeBytes);
  ~LocalFileSource() override;

  LocalFileSource(const LocalFileSource&) = delete;
  LocalFileSource& operator=(const LocalFileSource&) = delete;

  const std::string& uri() const override { return path_; }
  absl::StatusOr<size_t> Read(char* dst, size_t size) override;
  absl::StatusOr<int64_t> Skip(int64_t size) override;
  int64_t position() const override { return position_; }

  // Size of the file in bytes when it was opened (0 for pipes and FIFOs).
  int64_t size_bytes() const { return size_bytes_; }

 private:
  LocalFileSource(std::string path, int fd, int64_t size_bytes, bool seekable,
                  size_t block_size_bytes);
  absl::Status Refill();

  std::string path_;
  int fd_;
  int64_t size_bytes_;
  bool seekable_;  // a regular file; pipes and FIFOs are read through
  std::vector<char> buffer_;
  size_t begin_ = 0;  // next unread byte in buffer_
  size_t end_ = 0;    // end of valid bytes in buffer_
  int64_t position_ = 0;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_LOCAL_LOCAL_FILE_H_
