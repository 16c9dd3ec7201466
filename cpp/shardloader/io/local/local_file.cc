#include "shardloader/io/local/local_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {

absl::StatusOr<OpenedFile> OpenLocalFile(const std::string& path, int extra_flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | extra_flags);
  if (fd < 0) {
    return WithContext(ErrnoToStatus(errno, "cannot open shard"), {.uri = path});
  }
  struct stat info;
  const int error = ::fstat(fd, &info) != 0 ? errno : S_ISDIR(info.st_mode) ? EISDIR : 0;
  if (error != 0) {
    ::close(fd);
    return WithContext(ErrnoToStatus(error, "cannot read shard"), {.uri = path});
  }
  return OpenedFile{
      .fd = fd, .size_bytes = static_cast<int64_t>(info.st_size), .regular = S_ISREG(info.st_mode)};
}

absl::StatusOr<std::unique_ptr<LocalFileSource>> LocalFileSource::Open(const std::string& path,
                                                                       size_t block_size_bytes) {
  SHARDLOADER_ASSIGN_OR_RETURN(const OpenedFile file, OpenLocalFile(path));
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<LocalFileSource>(
      new LocalFileSource(path, file.fd, file.size_bytes, file.regular, block_size_bytes));
}

LocalFileSource::LocalFileSource(std::string path, int fd, int64_t size_bytes, bool seekable,
                                 size_t block_size_bytes)
    : path_(std::move(path)),
      fd_(fd),
      size_bytes_(size_bytes),
      seekable_(seekable),
      buffer_(std::max<size_t>(block_size_bytes, 4096)) {}

LocalFileSource::~LocalFileSource() { ::close(fd_); }

absl::Status LocalFileSource::Refill() {
  begin_ = end_ = 0;
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n >= 0) {
      end_ = static_cast<size_t>(n);
      return absl::OkStatus();
    }
    if (errno != EINTR) {
      return WithContext(ErrnoToStatus(errno, "read failed"), {.uri = path_, .offset = position_});
    }
  }
}

absl::StatusOr<size_t> LocalFileSource::Read(char* dst, size_t size) {
  if (begin_ == end_) {
    // Large reads bypass the buffer: one system call, no extra copy.
    if (size >= buffer_.size()) {
      while (true) {
        const ssize_t n = ::read(fd_, dst, size);
        if (n >= 0) {
          position_ += n;
          return static_cast<size_t>(n);
        }
        if (errno != EINTR) {
          return WithContext(ErrnoToStatus(errno, "read failed"),
                             {.uri = path_, .offset = position_});
        }
      }
    }
    SHARDLOADER_RETURN_IF_ERROR(Refill());
  }
  const size_t n = std::min(size, end_ - begin_);
  std::memcpy(dst, buffer_.data() + begin_, n);
  begin_ += n;
  position_ += static_cast<int64_t>(n);
  return n;
}

absl::StatusOr<int64_t> LocalFileSource::Skip(int64_t size) {
  const int64_t buffered = static_cast<int64_t>(end_ - begin_);
  if (size <= buffered) {
    begin_ += static_cast<size_t>(size);
    position_ += size;
    return size;
  }
  if (!seekable_) return ByteSource::Skip(size);
  const int64_t target = std::min(position_ + size, size_bytes_);
  if (::lseek(fd_, target, SEEK_SET) < 0) {
    return WithContext(ErrnoToStatus(errno, "seek failed"), {.uri = path_, .offset = position_});
  }
  begin_ = end_ = 0;
  const int64_t skipped = target - position_;
  position_ = target;
  return skipped;
}

}  // namespace shardloader
