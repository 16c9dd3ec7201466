// ShardIndex: where each sample of a tar shard lives, for random access.
//
// For every sample (WebDataset grouping, as SampleReader does it): its key,
// and for every member its extension, the byte offset of its data and its
// size. With it, a reader fetches exactly the samples it is dealt with one
// positional read per sample, and a resumed job jumps straight to its
// position.
//
// On disk the index is DALI's WebDataset index format, v1.2 (NVIDIA DALI,
// tools/wds2idx.py): a text file beside the shard, "train-000000.tar" →
// "train-000000.idx", whose first line is "v1.2 <number of samples>" and
// whose every other line describes one sample as repeated
// "<extension> <data offset> <size> <member name>" groups. DALI's older v1.1
// lines (groups without the name) are read too.
//
// `shardloader pack` and ShardWriter write these files; `shardloader index`
// builds them for existing shards. Offsets are trusted only after the member
// header in front of the data has been checked (see ReadIndexedSample), so a
// stale index is an error, never a wrong sample.
//
// Escaping: fields are separated by spaces and samples by newlines, but tar
// member names may hold both ("a b/c d.jpg"). In names and extensions, each
// space, other ASCII whitespace or control byte (0x00-0x20, 0x7f) and each
// backslash is written as "\xHH" with two lowercase hex digits
// ("a\x20b/c\x20d.jpg"; a backslash is "\x5c"). On reading, "\x" and two
// hex digits are unescaped and any other backslash is kept as is, so indexes
// written by DALI's tools (which do not escape) read unchanged unless a name
// holds a literal "\xHH". Names without such bytes are written exactly as
// DALI writes them.
//
// Memory: about 40 bytes per sample plus its key.
// Thread-safety: a built ShardIndex is immutable and safe to share.
#ifndef SHARDLOADER_FORMAT_SHARD_INDEX_H_
#define SHARDLOADER_FORMAT_SHARD_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shardloader/format/sample.h"
#include "shardloader/io/byte_source.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

struct IndexedMember {
  int64_t offset = 0;      // byte offset of the member's data
  int64_t size = 0;        // bytes
  uint32_t extension = 0;  // ShardIndex::extension(id)
};

class ShardIndex {
 public:
  int64_t num_samples() const { return static_cast<int64_t>(first_member_.size()); }
  absl::string_view key(int64_t sample) const;
  absl::Span<const IndexedMember> members(int64_t sample) const;
  const std::string& extension(uint32_t id) const { return extensions_[id]; }
  // Offset of the sample's first header block (for messages): exact when
  // scanned, the data offset less one block when read from a DALI index.
  int64_t header_offset(int64_t sample) const;

  // Appends a sample; then its members, in shard order.
  void AddSample(absl::string_view key);
  void AddMember(absl::string_view extension, int64_t offset, int64_t size);
  void SetHeaderOffset(int64_t offset) { header_offsets_.back() = offset; }

 private:
  std::string keys_;                    // all keys, concatenated
  std::vector<uint32_t> key_end_;       // end of each key in keys_
  std::vector<uint32_t> first_member_;  // index into members_
  std::vector<int64_t> header_offsets_;
  std::vector<IndexedMember> members_;
  std::vector<std::string> extensions_;  // distinct extensions
};

// Builds the index by reading the shard's headers (the data is skipped) into
// `*index`. Errors: those of SampleReader (DataLoss naming shard, offset and
// key); `*index` then holds the samples before the error.
absl::Status ScanShardIndex(std::unique_ptr<ByteSource> shard, ShardIndex* index);

// Parses a DALI WebDataset index (v1.1 or v1.2), unescaping names and
// extensions (see the top of this file). Errors: DataLoss naming
// `uri` and the line for malformed text or a sample count that disagrees.
absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view text, const std::string& uri);

// Checks every member of `index`, read from the index file `index_uri`,
// against the real size of its shard: its data starts after a header block
// and ends inside the shard (offset + size <= shard_size, computed without
// overflow). An index comes from outside, so this is done before any read,
// allocation or mapping is sized by it. Errors: DataLoss naming the shard,
// the index file and its line, and the member's offset and sample key.
absl::Status CheckShardIndexBounds(const ShardIndex& index, int64_t shard_size,
                                   const std::string& shard_uri, const std::string& index_uri);

// Formats `index` as a v1.2 DALI WebDataset index, escaping names and
// extensions (see the top of this file).
std::string FormatShardIndex(const ShardIndex& index);

// Scans the shard at `uri` and writes its index file beside it (under a
// temporary name, then renamed; see io/output/output_file.h). Returns the number of
// samples. Errors: those of opening and scanning the shard (DataLoss naming
// shard, offset and key) and of writing the index file.
absl::StatusOr<int64_t> WriteShardIndexFile(const std::string& uri,
                                            const SourceOptions& options = {});

// The index file of a shard: the shard's URI with its last extension
// replaced by ".idx" ("a/train-000001.tar" → "a/train-000001.idx"). The
// query and fragment of an http(s) URL are kept, so a presigned URL's token
// goes with it ("https://h/a.tar?X=1" → "https://h/a.idx?X=1").
std::string IndexUriFor(const std::string& shard_uri);

// Reads sample `sample` of `index` from `shard` into `*out` (its strings'
// capacity is reused): every member whose extension is in `wanted` (all if
// `wanted` is empty) is read; the others appear with empty data. When the
// shard's bytes are in memory (RandomAccessSource::mapped), the fields view
// them and `out->backing` holds the shard; otherwise they are copied. Each
// read member is checked against the tar header in front of its data (a
// valid header checksum and the same size), so a stale index or a damaged
// member is DataLoss naming the shard, the offset and the key; so is a
// member that does not lie inside the shard, found before anything is read
// or allocated for it.
absl::Status ReadIndexedSample(std::shared_ptr<const RandomAccessSource> shard,
                               const ShardIndex& index, int64_t sample,
                               absl::Span<const std::string> wanted, Sample* out);

}  // namespace shardloader

#endif  // SHARDLOADER_FORMAT_SHARD_INDEX_H_
