#include "shardloader/io/open_source.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shardloader/io/local_file.h"
#include "shardloader/status.h"

namespace shardloader {

absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(
    const std::string& uri, const SourceOptions& options) {
  constexpr absl::string_view kFileScheme = "file://";
  if (absl::StartsWith(uri, kFileScheme)) {
    return LocalFileSource::Open(uri.substr(kFileScheme.size()),
                                 options.block_size_bytes);
  }
  const size_t scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    return LocalFileSource::Open(uri, options.block_size_bytes);
  }
  const std::string scheme = uri.substr(0, scheme_end);
  if (scheme == "http" || scheme == "https" || scheme == "s3") {
    return WithContext(absl::UnimplementedError(absl::StrCat(
                           scheme, ":// shards are not supported yet")),
                       {.uri = uri});
  }
  return WithContext(
      absl::InvalidArgumentError(absl::StrCat("unknown URI scheme '", scheme, "'")),
      {.uri = uri});
}

}  // namespace shardloader
