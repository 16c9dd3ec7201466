// Shard lists: turning what the user wrote into an ordered list of shard URIs.
//
// Accepted specs (WebDataset's and bash's conventions):
//   "train-{000000..000127}.tar"  numeric brace range, zero padding kept;
//                                 ranges may count down and may repeat
//                                 ("{a,b}{00..09}")
//   "{train,val}-0.tar"           brace alternatives
//   "train-0.tar::train-1.tar"    several specs joined by "::" (WebDataset)
//   "/data/shards/"               a directory: the shards its index.json lists
//                                 (written by pack / ShardWriter), in that
//                                 order; without one, its *.tar files,
//                                 sorted by name
//   "/data/shards/index.json"     the shards a shardloader index lists (any
//                                 URI ending in ".json"), relative to it
//   "/data/shards/train-0.tar"    one path or URI
//   "s3://bucket/train/"          an S3 prefix (a URI ending in '/'): its
//                                 *.tar objects in key order (ListPrefix)
//
// Thread-safety: pure functions (ResolveShards reads the file system).
#ifndef SHARDLOADER_PLAN_SHARD_LIST_H_
#define SHARDLOADER_PLAN_SHARD_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

// Expands brace ranges and alternatives in `pattern`, left to right, in the
// order bash would. A numeric range keeps the width of its wider bound when
// either bound has a leading zero ("{08..10}" gives 08, 09, 10). Errors:
// InvalidArgument for unbalanced braces, a range of more than 10^7 items, or
// an expansion of more than 10^7 names or 128 MiB of name characters.
absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern);

// Expands each spec (split on "::", braces expanded, directories listed or
// read through their index.json) and concatenates the results in order.
// Errors: InvalidArgument for an empty result, malformed braces or an
// index that is not a shardloader index; NotFound for a directory that does
// not exist or a shard an index lists that does not exist (local files);
// each naming the path.
absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs);

// The same, listing remote prefixes ("s3://bucket/train/") with `source`'s
// endpoint and credentials. Errors: also those of ListPrefix().
absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs,
                                                       const SourceOptions& source);

// The same, adding to `warnings` (if not null) what a user should hear
// about: a directory whose index.json leaves out other *.tar files lying
// beside the shards it lists (left by an earlier pack, say), with their
// count. Those files are not read.
absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs,
                                                       const SourceOptions& source,
                                                       std::vector<std::string>* warnings);

}  // namespace shardloader

#endif  // SHARDLOADER_PLAN_SHARD_LIST_H_
