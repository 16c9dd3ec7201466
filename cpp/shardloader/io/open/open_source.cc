#include "shardloader/io/open/open_source.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shardloader/io/local/local_file.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/status.h"

namespace shardloader {

absl::StatusOr<std::string> LocalPathOf(const std::string& uri) {
  constexpr absl::string_view kFileScheme = "file://";
  if (absl::StartsWith(uri, kFileScheme)) return uri.substr(kFileScheme.size());
  const size_t scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) return uri;
  const std::string scheme = uri.substr(0, scheme_end);
  if (scheme == "http" || scheme == "https" || scheme == "s3") {
    return WithContext(absl::UnimplementedError(absl::StrCat(
                           "a ", scheme, ":// URI names a remote object, not a local path")),
                       {.uri = uri});
  }
  return WithContext(
      absl::InvalidArgumentError(absl::StrCat("unknown URI scheme '", scheme, "'")),
      {.uri = uri});
}

absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(
    const std::string& uri, const SourceOptions& options) {
  if (IsRemoteUri(uri)) {
    if (!options.cache_dir.empty()) {
      // Through the cache: the shard is fetched whole, then read locally.
      SL_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> cached,
                          OpenRandomAccess(uri, options));
      return StreamOf(std::move(cached), options.block_size_bytes);
    }
    SL_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                        OpenRemoteObject(uri, options));
    return ParallelStreamOf(std::move(object), options);
  }
  SL_ASSIGN_OR_RETURN(const std::string path, LocalPathOf(uri));
  return LocalFileSource::Open(path, options.block_size_bytes);
}

}  // namespace shardloader
