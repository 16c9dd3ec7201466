// SampleReader: groups the members of a tar shard into samples (WebDataset
// convention).
//
// Consecutive regular members with the same key form one sample; a new key
// starts the next sample. Skipped, as by WebDataset: directories, links and
// other non-regular members; names whose file name has no extension; and
// metadata files named "__*__" (e.g. "__index__.json"). A repeated extension
// within one sample is an error (DataLoss naming shard, offset and key).
// Members whose extension is not wanted are skipped without reading them.
// A shard that holds members but not one sample (only skipped members) is
// DataLoss naming the shard and its first member's offset: a damaged or
// foreign file, never a silently empty shard. An empty archive (no members)
// has no samples.
//
// Ownership: owns its source. Thread-safety: thread-compatible.
#ifndef SHARDLOADER_FORMAT_SAMPLE_READER_H_
#define SHARDLOADER_FORMAT_SAMPLE_READER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "shardloader/format/sample.h"
#include "shardloader/format/tar_reader.h"
#include "shardloader/io/byte_source.h"

namespace shardloader {

class SampleReader {
 public:
  // `wanted_extensions`: the extensions whose data is read (others appear in
  // Sample::fields with empty data); nullopt reads every field.
  explicit SampleReader(std::unique_ptr<ByteSource> source,
                        std::optional<std::vector<std::string>> wanted_extensions = std::nullopt);

  // Reads the next sample into `*sample`, reusing its strings' capacity.
  // Returns false at the end of the shard. Errors: those of TarReader, and
  // DataLoss for a repeated extension or a shard of members but no sample.
  absl::StatusOr<bool> Next(Sample* sample);

 private:
  absl::StatusOr<std::optional<TarMember>> NextDataMember();
  bool Wanted(absl::string_view extension) const;

  std::unique_ptr<ByteSource> source_;
  std::shared_ptr<const std::string> uri_;
  TarReader tar_;
  bool read_all_;
  absl::flat_hash_set<std::string> wanted_;
  std::optional<TarMember> pending_;  // first member of the next sample
  int64_t next_index_ = 0;
  // Header offset and name of the first member skipped, if any.
  std::optional<std::pair<int64_t, std::string>> first_skipped_;
};

}  // namespace shardloader

#endif  // SHARDLOADER_FORMAT_SAMPLE_READER_H_
