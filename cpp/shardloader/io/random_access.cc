#include "shardloader/io/random_access.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shardloader/io/local/local_file.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/io/cache/shard_cache.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

absl::Status PastEnd(const std::string& uri, int64_t offset, size_t size,
                     int64_t file_size) {
  return WithContext(
      absl::DataLossError(absl::StrCat("unexpected end of data: wanted ", size,
                                       " bytes at offset ", offset,
                                       ", the shard has ", file_size)),
      {.uri = uri, .offset = offset});
}

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
    if (offset < 0 || offset + static_cast<int64_t>(size) > size_) {
      return PastEnd(path_, offset, size, size_);
    }
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, dst + done, size - done,
                                offset + static_cast<int64_t>(done));
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n == 0) {
        return PastEnd(path_, offset, size, offset + done);  // truncated since
      } else if (errno != EINTR) {
        return WithContext(ErrnoToStatus(errno, "read failed"),
                           {.uri = path_, .offset = offset});
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

// Bytes held in memory (a pipe read whole).
class MemoryRandomAccess final : public RandomAccessSource {
 public:
  MemoryRandomAccess(std::string uri, std::string bytes)
      : uri_(std::move(uri)), bytes_(std::move(bytes)) {}

  const std::string& uri() const override { return uri_; }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }

  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override {
    if (offset < 0 || offset + static_cast<int64_t>(size) > this->size()) {
      return PastEnd(uri_, offset, size, this->size());
    }
    std::memcpy(dst, bytes_.data() + offset, size);
    return absl::OkStatus();
  }
  std::string_view mapped() const override { return bytes_; }

 private:
  std::string uri_;
  std::string bytes_;
};

absl::StatusOr<std::shared_ptr<RandomAccessSource>> ReadWhole(
    const std::string& path, const SourceOptions& options) {
  SL_ASSIGN_OR_RETURN(std::unique_ptr<LocalFileSource> stream,
                      LocalFileSource::Open(path, options.block_size_bytes));
  std::string bytes;
  std::vector<char> block(options.block_size_bytes);
  while (true) {
    SL_ASSIGN_OR_RETURN(const size_t n, stream->Read(block.data(), block.size()));
    if (n == 0) break;
    bytes.append(block.data(), n);
    if (static_cast<int64_t>(bytes.size()) > options.max_unseekable_bytes) {
      return WithContext(
          absl::ResourceExhaustedError(absl::StrCat(
              "a pipe is read into memory whole and this one is longer than ",
              options.max_unseekable_bytes, " bytes; use a regular file")),
          {.uri = path});
    }
  }
  return std::make_shared<MemoryRandomAccess>(path, std::move(bytes));
}

// Streams a RandomAccessSource block by block.
class RandomAccessStream final : public ByteSource {
 public:
  RandomAccessStream(std::shared_ptr<RandomAccessSource> source, size_t block)
      : source_(std::move(source)), block_size_(std::max<size_t>(block, 4096)) {}

  const std::string& uri() const override { return source_->uri(); }
  int64_t position() const override { return position_; }

  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    const int64_t left = source_->size() - position_;
    const size_t n = static_cast<size_t>(
        std::min<int64_t>(left, static_cast<int64_t>(std::min(size, block_size_))));
    if (n == 0) return 0;
    SL_RETURN_IF_ERROR(source_->ReadAt(position_, n, dst));
    position_ += static_cast<int64_t>(n);
    return n;
  }

  absl::StatusOr<int64_t> Skip(int64_t size) override {
    const int64_t n = std::min(size, source_->size() - position_);
    position_ += n;
    return n;
  }

 private:
  std::shared_ptr<RandomAccessSource> source_;
  size_t block_size_;
  int64_t position_ = 0;
};

}  // namespace

absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenRandomAccess(
    const std::string& uri, const SourceOptions& options) {
  if (IsRemoteUri(uri)) {
    if (!options.cache_dir.empty()) return OpenCachedShard(uri, options);
    SL_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                        OpenRemoteObject(uri, options));
    return RandomAccessOf(std::move(object));
  }
  SL_ASSIGN_OR_RETURN(const std::string path, LocalPathOf(uri));
  // O_NONBLOCK: opening a FIFO must not wait for a writer here.
  SL_ASSIGN_OR_RETURN(const OpenedFile file, OpenLocalFile(path, O_NONBLOCK));
  if (!file.regular) {
    ::close(file.fd);
    return ReadWhole(path, options);
  }
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_RANDOM);
  return std::make_shared<LocalRandomAccess>(path, file.fd, file.size_bytes,
                                             options.memory_map);
}

absl::StatusOr<std::string_view> RandomAccessSource::ViewAt(int64_t offset,
                                                             size_t size) const {
  const std::string_view bytes = mapped();
  if (offset < 0 || offset + static_cast<int64_t>(size) > static_cast<int64_t>(bytes.size())) {
    return PastEnd(uri(), offset, size, static_cast<int64_t>(bytes.size()));
  }
  const std::string_view view = bytes.substr(static_cast<size_t>(offset), size);
  // One read per 64 KiB (Linux's fault-around window: a fault maps the
  // resident pages around it) and of the last byte. A page that is not
  // resident is read by its fault, with the kernel's read-around.
  constexpr size_t kFaultAroundBytes = 64 << 10;
  const volatile char* touch = view.data();
  for (size_t i = 0; i < size; i += kFaultAroundBytes) (void)touch[i];
  if (size > 0) (void)touch[size - 1];
  return view;
}

std::unique_ptr<ByteSource> StreamOf(std::shared_ptr<RandomAccessSource> source,
                                     size_t block_size_bytes) {
  return std::make_unique<RandomAccessStream>(std::move(source), block_size_bytes);
}

}  // namespace shardloader
