#include "shardloader/io/open/open_source.h"

#include "absl/strings/match.h"
#include "shardloader/io/cache/shard_cache.h"
#include "shardloader/io/local/local_file.h"
#include "shardloader/io/local/local_random_access.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/io/uri.h"
#include "shardloader/status.h"

namespace shardloader {

absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(const std::string& uri,
                                                       const SourceOptions& options) {
  if (IsRemoteUri(uri)) {
    if (!options.cache_dir.empty()) {
      // Through the cache: the shard is fetched whole, then read locally.
      SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> cached,
                                   OpenCachedShard(uri, options));
      return StreamOf(std::move(cached), options.block_size_bytes);
    }
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                                 OpenRemoteObject(uri, options));
    return ParallelStreamOf(std::move(object), options);
  }
  SHARDLOADER_ASSIGN_OR_RETURN(const std::string path, LocalPathOf(uri));
  return LocalFileSource::Open(path, options.block_size_bytes);
}

absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenRandomAccess(const std::string& uri,
                                                                     const SourceOptions& options) {
  if (IsRemoteUri(uri)) {
    if (!options.cache_dir.empty()) return OpenCachedShard(uri, options);
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                                 OpenRemoteObject(uri, options));
    return RandomAccessOf(std::move(object));
  }
  SHARDLOADER_ASSIGN_OR_RETURN(const std::string path, LocalPathOf(uri));
  return OpenLocalRandomAccess(path, options);
}

absl::Status PrefetchShard(const std::string& uri, const SourceOptions& options) {
  if (!IsRemoteUri(uri)) return LocalPathOf(uri).status();
  if (!options.cache_dir.empty()) PrefetchCachedShard(uri, options);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListPrefix(const std::string& uri,
                                                    const SourceOptions& options) {
  if (absl::StartsWith(uri, "s3://")) return ListS3Prefix(uri, options);
  return WithContext(
      IsRemoteUri(uri) ? absl::UnimplementedError("HTTP servers cannot be listed; name the shards "
                                                  "(e.g. with a brace range)")
                       : absl::InvalidArgumentError("ListPrefix lists s3:// prefixes only"),
      {.uri = uri});
}

absl::StatusOr<std::unique_ptr<OutputFile>> CreateOutputFile(const std::string& uri,
                                                             const SourceOptions& options) {
  if (absl::StartsWith(uri, "s3://")) return CreateS3OutputFile(uri, options);
  if (IsRemoteUri(uri)) {
    return WithContext(absl::InvalidArgumentError("http(s):// URIs cannot be written"),
                       {.uri = uri});
  }
  SHARDLOADER_ASSIGN_OR_RETURN(const std::string path, LocalPathOf(uri));
  return CreateLocalOutputFile(path);
}

absl::Status WriteWholeFile(const std::string& uri, absl::string_view content,
                            const SourceOptions& options) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, CreateOutputFile(uri, options));
  SHARDLOADER_RETURN_IF_ERROR(file->Write(content));
  return file->Commit();
}

}  // namespace shardloader
