#include "shardloader/io/uri.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {

bool IsRemoteUri(absl::string_view uri) {
  return absl::StartsWith(uri, "http://") || absl::StartsWith(uri, "https://") ||
         absl::StartsWith(uri, "s3://");
}

absl::StatusOr<std::string> LocalPathOf(const std::string& uri) {
  constexpr absl::string_view kFileScheme = "file://";
  if (absl::StartsWith(uri, kFileScheme)) return uri.substr(kFileScheme.size());
  const size_t scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) return uri;
  const std::string scheme = uri.substr(0, scheme_end);
  if (IsRemoteUri(uri)) {
    return WithContext(absl::UnimplementedError(absl::StrCat(
                           "a ", scheme, ":// URI names a remote object, not a local path")),
                       {.uri = uri});
  }
  return WithContext(absl::InvalidArgumentError(absl::StrCat("unknown URI scheme '", scheme, "'")),
                     {.uri = uri});
}

}  // namespace shardloader
