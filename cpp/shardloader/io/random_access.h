// RandomAccessSource: positional reads of one shard's bytes (the interface
// every storage backend implements; io/open/open_source.h opens one for a
// URI).
//
// The loader reads samples through a shard's sample index (format/
// shard_index.h): each read names a byte range, so ranks and resumed jobs read
// only the samples they are dealt. Local files are memory-mapped or read with
// pread(2) (io/local/local_random_access.h); remote backends use ranged
// requests (io/remote/remote_source.h). Sources whose bytes are in memory
// hand out views (ViewAt) instead of copies.
//
// Ownership: shared; the source stays open while anyone holds it.
// Thread-safety: ReadAt() may be called from many threads at once.
#ifndef SHARDLOADER_IO_RANDOM_ACCESS_H_
#define SHARDLOADER_IO_RANDOM_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardloader/io/byte_source.h"

namespace shardloader {

class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;

  // The URI or path, for error messages.
  virtual const std::string& uri() const = 0;

  // Size of the shard in bytes.
  virtual int64_t size() const = 0;

  // Reads exactly `size` bytes starting at byte `offset` into `dst`.
  // Errors: DataLoss ("unexpected end of data") if the range passes the end;
  // the backend's I/O errors; each with the URI and offset.
  virtual absl::Status ReadAt(int64_t offset, size_t size, char* dst) const = 0;

  // The whole shard's bytes when they are in memory (a memory-mapped local
  // file, a pipe read whole), valid while this source lives; empty otherwise.
  virtual std::string_view mapped() const { return {}; }

  // A view of the `size` bytes at `offset` of mapped(), valid while this
  // source lives. The view is touched here, so pages that are not resident
  // are read on the calling thread (an I/O thread) rather than later by
  // whoever reads the view. Requires a non-empty mapped().
  // Errors: DataLoss ("unexpected end of data") if the range passes the
  // end, with the URI and offset.
  absl::StatusOr<std::string_view> ViewAt(int64_t offset, size_t size) const;
};

// A source over bytes held in memory (a pipe read whole, tests).
// Ownership: owns the bytes.
class MemoryRandomAccess final : public RandomAccessSource {
 public:
  MemoryRandomAccess(std::string uri, std::string bytes)
      : uri_(std::move(uri)), bytes_(std::move(bytes)) {}

  const std::string& uri() const override { return uri_; }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override;
  std::string_view mapped() const override { return bytes_; }

 private:
  std::string uri_;
  std::string bytes_;
};

// A forward-only ByteSource over a RandomAccessSource (for scanning a shard
// that is already open for positional reads). Reads `block_size_bytes` at a
// time; skips are free.
std::unique_ptr<ByteSource> StreamOf(std::shared_ptr<RandomAccessSource> source,
                                     size_t block_size_bytes = size_t{1} << 20);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_RANDOM_ACCESS_H_
