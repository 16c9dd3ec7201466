#include "shardloader/io/random_access.h"

#include <algorithm>
#include <cstring>

#include "shardloader/io/read_range.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

// A forward-only stream over a RandomAccessSource, `block_size` bytes a read.
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
    SHARDLOADER_RETURN_IF_ERROR(source_->ReadAt(position_, n, dst));
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

absl::Status MemoryRandomAccess::ReadAt(int64_t offset, size_t size, char* dst) const {
  SHARDLOADER_RETURN_IF_ERROR(CheckReadRange(uri_, offset, size, this->size()));
  std::memcpy(dst, bytes_.data() + offset, size);
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> RandomAccessSource::ViewAt(int64_t offset, size_t size) const {
  const std::string_view bytes = mapped();
  SHARDLOADER_RETURN_IF_ERROR(
      CheckReadRange(uri(), offset, size, static_cast<int64_t>(bytes.size())));
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
