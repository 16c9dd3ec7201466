// ShardWriter: packs samples into a numbered series of tar shards.
//
// Samples are written in the WebDataset layout (member "<key>.<extension>"
// per field) to shards named by a pattern, either printf-style
// ("out/train-%06d.tar") or an open brace range ("out/train-{000000..}.tar",
// the width of the zeros sets the padding). A new shard starts when the next
// sample would push the current one past `max_size_bytes` or
// `max_samples_per_shard`. Each shard is written under a temporary name in
// the same directory and renamed when complete, so a crash never leaves a
// half-written shard under its final name. Shards may also go to S3
// ("s3://bucket/train-%06d.tar"): each is a multipart upload that becomes an
// object only when complete (io/output/output_file.h). Beside each shard goes its sample
// index ("train-000000.idx", DALI's WebDataset index format; see
// format/shard_index.h), written before the shard takes its final name.
// Close() writes a JSON index of the shards (file name, sample count, size
// in bytes, SHA-256).
//
// Ownership: owns its open file. Thread-safety: thread-compatible. A
// ShardWriter destroyed without Close() removes its unfinished shard.
#ifndef SHARDLOADER_SHARD_WRITER_H_
#define SHARDLOADER_SHARD_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

namespace internal_writer {
class OpenShard;
}  // namespace internal_writer

struct ShardWriterOptions {
  std::string pattern;                        // see above
  int64_t max_size_bytes = int64_t{1} << 30;  // per shard, including headers
  int64_t max_samples_per_shard = 100'000;
  int64_t first_shard_index = 0;
  // Path of the JSON index; empty: "index.json" beside the shards.
  std::string index_path;
  // For s3:// patterns: endpoint, region, credentials' profile, part size.
  SourceOptions destination;
};

struct ShardInfo {
  std::string path;  // final path of the shard
  int64_t num_samples = 0;
  int64_t size_bytes = 0;
  std::string sha256;  // lowercase hex digest of the whole file
};

class ShardWriter {
 public:
  // Errors: InvalidArgument for a pattern without exactly one number placeholder or
  // non-positive limits; NotFound if the output directory does not exist.
  static absl::StatusOr<std::unique_ptr<ShardWriter>> Create(ShardWriterOptions options);
  ~ShardWriter();

  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // One field of a sample: extension (without the dot) and bytes.
  using Field = std::pair<std::string, std::string>;

  // Writes one sample. `key` must be non-empty with no dot in its file name
  // part; extensions non-empty and distinct. Errors: InvalidArgument for a
  // bad key or extension, and I/O errors naming the shard.
  absl::Status Write(absl::string_view key, const std::vector<Field>& fields);

  // Finishes the current shard and writes the index. Idempotent.
  absl::Status Close();

  // Gives up: removes the unfinished shard (finished ones stay) and writes
  // no index. Later Write() calls fail.
  void Abort();

  // Shards completed so far.
  const std::vector<ShardInfo>& shards() const { return shards_; }
  const std::string& index_path() const { return options_.index_path; }

 private:
  explicit ShardWriter(ShardWriterOptions options);
  absl::Status FinishShard();
  absl::Status WriteIndex() const;

  ShardWriterOptions options_;
  std::unique_ptr<internal_writer::OpenShard> current_;
  std::vector<ShardInfo> shards_;
  int64_t next_index_;
  bool closed_ = false;
};

// The path of shard number `index` for `pattern` (see ShardWriter).
// Errors: InvalidArgument for a pattern without a placeholder.
absl::StatusOr<std::string> ShardPath(absl::string_view pattern, int64_t index);

}  // namespace shardloader

#endif  // SHARDLOADER_SHARD_WRITER_H_
