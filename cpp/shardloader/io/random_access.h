// RandomAccessSource: positional reads of one shard's bytes.
//
// The loader reads samples through a shard's sample index (format/
// shard_index.h): each read names a byte range, so ranks and resumed jobs read
// only the samples they are dealt. Local files use pread(2); remote backends
// use ranged requests. Pipes and FIFOs cannot seek: they are read once, whole,
// into memory (up to `max_unseekable_bytes`). Regular local files are
// memory-mapped (SourceOptions::memory_map); sources whose bytes are in
// memory hand out views (ViewAt) instead of copies.
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
#include "shardloader/io/open/open_source.h"

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

// Opens `uri` for positional reads: local paths and file:// URIs with
// pread(2); http(s):// and s3:// with one ranged GET per read (ETag pinned
// at open, retries, resume: remote_object.h), or, with
// `options.cache_dir` set, from the shard fetched whole into the local cache
// (shard_cache.h). Errors: as OpenSource(), and ResourceExhausted for a pipe
// longer than `options.max_unseekable_bytes`.
absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenRandomAccess(
    const std::string& uri, const SourceOptions& options = {});

// A forward-only ByteSource over a RandomAccessSource (for scanning a shard
// that is already open for positional reads). Reads `block_size_bytes` at a
// time; skips are free.
std::unique_ptr<ByteSource> StreamOf(std::shared_ptr<RandomAccessSource> source,
                                     size_t block_size_bytes = size_t{1} << 20);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_RANDOM_ACCESS_H_
