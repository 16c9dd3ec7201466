// Remote shards: http://, https:// and s3:// URIs as ByteSources (parallel
// ranged GETs reassembled in order) and RandomAccessSources (one ranged GET
// per read), and listing a remote prefix.
//
// Streaming: a shard is cut into parts of `SourceOptions::part_size_bytes`;
// up to `max_concurrency` parts are fetched at once, each by its own ranged
// GET on a shared keep-alive connection pool (curl_transport.h, or the
// HttpTransport a test passes), and handed
// to the reader in order. With per-request latency L and per-connection rate
// R, one request alone reaches part/(L + part/R); N in flight reach N times
// that, up to the link's rate. Memory: at most max_concurrency parts per
// open stream.
//
// Thread-safety: the functions are thread-safe; the returned stream is
// thread-compatible, the random-access source thread-safe.
#ifndef SHARDLOADER_IO_REMOTE_REMOTE_SOURCE_H_
#define SHARDLOADER_IO_REMOTE_REMOTE_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/io/byte_source.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/remote/remote_object.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

// Opens (stats) the remote object `uri` names; its requests go through
// `transport`. Errors: as RemoteObject::Open() and S3Client::Create().
absl::StatusOr<std::shared_ptr<RemoteObject>> OpenRemoteObject(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

// The object's bytes in order, fetched as parallel ranged GETs; parts are
// fetched only once reading starts. Read() errors: as ReadRange().
std::unique_ptr<ByteSource> ParallelStreamOf(std::shared_ptr<RemoteObject> object,
                                             const SourceOptions& options);

// Positional reads of the object, one ranged GET per ReadAt().
std::shared_ptr<RandomAccessSource> RandomAccessOf(std::shared_ptr<RemoteObject> object);

// The objects under "s3://bucket/prefix" as "s3://bucket/key" URIs, in key
// order, listed through `transport`. Errors: InvalidArgument for a malformed
// URI; otherwise as S3Client::Create() and S3Client::ListKeys().
absl::StatusOr<std::vector<std::string>> ListS3Prefix(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_REMOTE_SOURCE_H_
