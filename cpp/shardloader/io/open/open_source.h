// Opening a URI: the one place where a URI's scheme picks a storage backend.
//
//   local path, file://   io/local/   (LocalFileSource, OpenLocalRandomAccess,
//                                     CreateLocalOutputFile)
//   http://, https://     io/remote/  (parallel ranged GETs, retries; read only)
//   s3://bucket/key       io/remote/  (the same, signed; written as multipart
//                                     uploads by io/output/)
// With SourceOptions::cache_dir set, remote shards are read through
// io/cache/ (fetched whole to local disk, then read locally).
//
// Thread-safety: safe to call from many threads.
#ifndef SHARDLOADER_IO_OPEN_OPEN_SOURCE_H_
#define SHARDLOADER_IO_OPEN_OPEN_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/io/byte_source.h"
#include "shardloader/io/output/output_file.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

// A forward-only stream of the shard's bytes. Errors: NotFound,
// PermissionDenied, InvalidArgument (unknown scheme), Unavailable (network,
// after retries), DataLoss (a remote object changed while read), each
// naming the URI.
absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(const std::string& uri,
                                                       const SourceOptions& options = {});

// Positional reads of the shard: local files mapped or with pread(2);
// http(s):// and s3:// with one ranged GET per read (ETag pinned at open,
// retries, resume: io/remote/remote_object.h), or, with `options.cache_dir`
// set, from the shard fetched whole into the local cache. Errors: as
// OpenSource(), and ResourceExhausted for a pipe longer than
// `options.max_unseekable_bytes`.
absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenRandomAccess(
    const std::string& uri, const SourceOptions& options = {});

// A hint that `uri` is read soon: with `options.cache_dir` set, a remote
// shard starts being fetched into the cache in the background; otherwise
// nothing. Errors: InvalidArgument for an unknown scheme (fetch failures are
// left to the later open).
absl::Status PrefetchShard(const std::string& uri, const SourceOptions& options);

// The objects under a remote prefix, as URIs in key order: "s3://bucket/
// prefix" lists its keys. Errors: Unimplemented for http(s):// (HTTP has no
// listing), InvalidArgument for local paths; otherwise as S3Client::ListKeys().
absl::StatusOr<std::vector<std::string>> ListPrefix(const std::string& uri,
                                                    const SourceOptions& options);

// A file that appears under `uri` only once committed: a local path, file://
// or s3:// URI. Errors: NotFound (no such directory), PermissionDenied,
// InvalidArgument (an unknown scheme or http(s)://, which cannot be
// written), S3 credential errors as S3Client::Create().
absl::StatusOr<std::unique_ptr<OutputFile>> CreateOutputFile(const std::string& uri,
                                                             const SourceOptions& options = {});

// Writes `content` as the whole file at `uri` (create, write, commit).
absl::Status WriteWholeFile(const std::string& uri, absl::string_view content,
                            const SourceOptions& options = {});

}  // namespace shardloader

#endif  // SHARDLOADER_IO_OPEN_OPEN_SOURCE_H_
