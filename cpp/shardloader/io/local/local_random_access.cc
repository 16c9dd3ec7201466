#include "shardloader/io/local/local_random_access.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shardloader/io/local/local_file.h"
#include "shardloader/io/read_range.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

// A regular local file read with pread(2) and, when asked, memory-mapped.
class LocalRandomAccess final : public RandomAccessSource {
 public:
  LocalRandomAccess(std::string path, int fd, int64_t size, bool memory_map)
      : path_(std::move(path)), fd_(fd), size_(size) {
    if (!memory_map || size == 0) return;
    // A file system that cannot map (some FUSE ones) keeps pread.
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      mapped_ = std::string_view(static_cast<const char*>(map), static_cast<size_t>(size));
    }
  }
  ~LocalRandomAccess() override {
    if (!mapped_.empty()) ::munmap(const_cast<char*>(mapped_.data()), mapped_.size());
    ::close(fd_);
  }

  const std::string& uri() const override { return path_; }
  int64_t size() const override { return size_; }
  std::string_view mapped() const override { return mapped_; }

  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override {
    SHARDLOADER_RETURN_IF_ERROR(CheckReadRange(path_, offset, size, size_));
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, dst + done, size - done, offset + static_cast<int64_t>(done));
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n == 0) {  // truncated since it was opened
        return CheckReadRange(path_, offset, size, offset + static_cast<int64_t>(done));
      } else if (errno != EINTR) {
        return WithContext(ErrnoToStatus(errno, "read failed"), {.uri = path_, .offset = offset});
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int fd_;
  int64_t size_;
  std::string_view mapped_;  // the whole file, or empty
};

// A pipe or FIFO, read whole into memory.
absl::StatusOr<std::shared_ptr<RandomAccessSource>> ReadWhole(const std::string& path,
                                                              const SourceOptions& options) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<LocalFileSource> stream,
                               LocalFileSource::Open(path, options.block_size_bytes));
  std::string bytes;
  std::vector<char> block(options.block_size_bytes);
  while (true) {
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, stream->Read(block.data(), block.size()));
    if (n == 0) break;
    bytes.append(block.data(), n);
    if (static_cast<int64_t>(bytes.size()) > options.max_unseekable_bytes) {
      return WithContext(absl::ResourceExhaustedError(absl::StrCat(
                             "a pipe is read into memory whole and this one is longer than ",
                             options.max_unseekable_bytes, " bytes; use a regular file")),
                         {.uri = path});
    }
  }
  return std::make_shared<MemoryRandomAccess>(path, std::move(bytes));
}

}  // namespace

absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenLocalRandomAccess(
    const std::string& path, const SourceOptions& options) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer here.
  SHARDLOADER_ASSIGN_OR_RETURN(const OpenedFile file, OpenLocalFile(path, O_NONBLOCK));
  if (!file.regular) {
    ::close(file.fd);
    return ReadWhole(path, options);
  }
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_RANDOM);
  return std::make_shared<LocalRandomAccess>(path, file.fd, file.size_bytes, options.memory_map);
}

}  // namespace shardloader
