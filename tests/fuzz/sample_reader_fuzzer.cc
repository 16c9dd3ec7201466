// Fuzz target: WebDataset sample grouping over arbitrary tar bytes.
//
// Reads every sample with SampleReader, once with every field and once with
// only "jpg" and "cls" wanted; then scans the same bytes into a ShardIndex
// (the path that writes `.idx` files) and checks that the index it formats
// parses back with the same samples.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardloader/format/sample.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/io/memory_source.h"

namespace {

void ReadAll(const std::string& bytes, std::optional<std::vector<std::string>> wanted) {
  shardloader::SampleReader reader(std::make_unique<shardloader::MemorySource>("fuzz.tar", bytes),
                                   std::move(wanted));
  shardloader::Sample sample;
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<bool> more = reader.Next(&sample);
    if (!more.ok() || !*more) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ReadAll(bytes, std::nullopt);
  ReadAll(bytes, std::vector<std::string>{"jpg", "cls"});

  shardloader::ShardIndex index;
  if (!shardloader::ScanShardIndex(std::make_unique<shardloader::MemorySource>("fuzz.tar", bytes),
                                   &index)
           .ok()) {
    return 0;
  }
  // What the scanner found must survive the trip through the `.idx` text.
  const std::string text = shardloader::FormatShardIndex(index);
  absl::StatusOr<shardloader::ShardIndex> parsed = shardloader::ParseShardIndex(text, "fuzz.idx");
  if (!parsed.ok() || parsed->num_samples() != index.num_samples()) std::abort();
  for (int64_t i = 0; i < index.num_samples(); ++i) {
    if (parsed->key(i) != index.key(i) || parsed->members(i).size() != index.members(i).size()) {
      std::abort();
    }
  }
  return 0;
}
