// Fuzz target: DALI `.idx` sample indexes, and reading samples through them.
//
// The input is the index text, then optionally "\n#shard\n" and the shard's
// bytes. The text is parsed; a parsed index is bounds-checked against the
// shard, formatted and parsed again, and then up to 64
// of its samples are read with ReadIndexedSample from a MemoryRandomAccess
// (the memory-mapped path, views) and from the same bytes without mapped()
// (the copying path), with every field and with only "jpg" wanted. The
// reads run whether or not the bounds check passed: ReadIndexedSample must
// itself refuse members outside the shard (a huge size once wrapped the
// range check and read past the mapping).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "shardloader/format/sample.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/io/random_access.h"

namespace {

constexpr absl::string_view kSeparator = "\n#shard\n";

// The shard's bytes without mapped(): ReadIndexedSample copies.
class UnmappedRandomAccess final : public shardloader::RandomAccessSource {
 public:
  explicit UnmappedRandomAccess(std::shared_ptr<const shardloader::MemoryRandomAccess> inner)
      : inner_(std::move(inner)) {}
  const std::string& uri() const override { return inner_->uri(); }
  int64_t size() const override { return inner_->size(); }
  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override {
    return inner_->ReadAt(offset, size, dst);
  }

 private:
  std::shared_ptr<const shardloader::MemoryRandomAccess> inner_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(kSeparator);
  const absl::string_view text = input.substr(0, split);
  const absl::string_view shard_bytes = split == absl::string_view::npos
                                            ? absl::string_view()
                                            : input.substr(split + kSeparator.size());

  absl::StatusOr<shardloader::ShardIndex> index = shardloader::ParseShardIndex(text, "fuzz.idx");
  if (!index.ok()) return 0;

  // A hostile index need not round-trip (an extension "/x" names no member
  // the scanner could find); sample_reader_fuzzer checks the scanner's.
  (void)shardloader::ParseShardIndex(shardloader::FormatShardIndex(*index), "fuzz.idx");

  auto mapped =
      std::make_shared<const shardloader::MemoryRandomAccess>("fuzz.tar", std::string(shard_bytes));
  auto unmapped = std::make_shared<const UnmappedRandomAccess>(mapped);
  (void)shardloader::CheckShardIndexBounds(*index, mapped->size(), "fuzz.tar", "fuzz.idx");

  const std::vector<std::string> only_jpg = {"jpg"};
  shardloader::Sample sample;
  for (int64_t i = 0; i < index->num_samples() && i < 64; ++i) {
    (void)shardloader::ReadIndexedSample(mapped, *index, i, {}, &sample);
    (void)shardloader::ReadIndexedSample(unmapped, *index, i, {}, &sample);
    (void)shardloader::ReadIndexedSample(mapped, *index, i, only_jpg, &sample);
  }
  return 0;
}
