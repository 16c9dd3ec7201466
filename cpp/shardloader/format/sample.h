// Sample: one training example, the fields that share a key in a shard.
//
// WebDataset convention: a member "dir/n01440764_10026.JPEG" has the key
// "dir/n01440764_10026" (the path up to the first dot of the file name) and
// the extension "jpeg" (the rest, lowercased). Every sample carries its
// identity (shard URI, byte offset, index in the shard) so errors and skips
// can name it.
//
// Thread-safety: plain value types; SplitKey is pure.
#ifndef SHARDLOADER_FORMAT_SAMPLE_H_
#define SHARDLOADER_FORMAT_SAMPLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "shardloader/status.h"

namespace shardloader {

struct SampleField {
  std::string extension;  // lowercase, without the leading dot: "jpg", "seg.png"
  // The member's bytes are either copied into `data`, or viewed where they
  // already lie in memory (a memory-mapped shard; Sample::backing keeps it
  // alive), in `view`, with `data` empty. Read them through bytes().
  std::string data;
  std::string_view view;
  int64_t offset = 0;  // byte offset of the member's data in the shard
  int64_t size = 0;    // the member's size in bytes

  // The member's bytes (empty if not read).
  std::string_view bytes() const { return view.data() != nullptr ? view : std::string_view(data); }
};

struct Sample {
  std::string key;
  std::shared_ptr<const std::string> shard;  // URI of its shard (shared)
  int64_t offset = 0;                        // byte offset of its first member's header
  int64_t index = 0;                         // position among the shard's samples, from 0
  int64_t shard_index = 0;                   // the shard's position in the loader's list
  // The sample's fields. A reused Sample keeps the capacity of its fields'
  // strings, so refilling it allocates nothing in steady state.
  std::vector<SampleField> fields;
  // Keeps alive the memory the fields' views point into (null when every
  // field owns its bytes).
  std::shared_ptr<const void> backing;

  // The field with extension `extension`, or nullptr.
  const SampleField* Find(absl::string_view extension) const;
  // Where the sample lives, for errors.
  ErrorContext context() const {
    return {.uri = shard ? *shard : std::string(), .offset = offset, .key = key};
  }
};

struct KeyAndExtension {
  absl::string_view key;
  std::string extension;  // lowercased
};

// Splits a member path into key and extension. Returns nullopt for names
// whose file name has no dot or starts with one (WebDataset skips those).
std::optional<KeyAndExtension> SplitKey(absl::string_view path);

}  // namespace shardloader

#endif  // SHARDLOADER_FORMAT_SAMPLE_H_
