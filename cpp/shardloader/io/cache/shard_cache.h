// The local shard cache: a rolling window of remote shards on local disk.
//
// With SourceOptions::cache_dir set, a remote shard is fetched whole into the
// cache (parallel ranged GETs, remote_source.h) and then read from the local
// file; later epochs and restarted jobs reuse it. Layout of the directory,
// per shard (KEY = SHA-256 of the URI and endpoint, 32 hex digits):
//   KEY.shard        the bytes, complete (renamed into place when fetched)
//   KEY.meta         JSON: uri, size, etag and sha256 of KEY.shard
//   KEY.lock         flock(2)ed while the shard is checked or fetched
//   KEY.shard.tmp-*  a fetch in progress (or left by a crash; removed)
// An entry is used only when its meta matches the object's current size and
// ETag (one HEAD per open) and the file's size and SHA-256 match the meta
// (hashed once per process): a partial, stale or corrupt file is refetched.
//
// Several processes on one node may share a cache directory: the per-shard
// lock makes each shard fetched once, files appear only by rename(2), and no
// shared memory is used. Eviction: before a fetch, least recently used shards
// (by mtime, touched on each open) are deleted until the new one fits in
// `cache_limit_bytes`; a reader holding an evicted shard keeps reading it
// (the file is unlinked, not truncated). A shard larger than the limit, or
// one that cannot fit beside shards being fetched, is read from the network
// uncached: the cache never waits for space.
//
// Thread-safety: all functions are thread-safe.
#ifndef SHARDLOADER_IO_CACHE_SHARD_CACHE_H_
#define SHARDLOADER_IO_CACHE_SHARD_CACHE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

// Opens remote `uri` through the cache in `options.cache_dir`, fetching it
// first if needed (blocking; a fetch already running for it, in this or
// another process, is waited for, not repeated). The source's uri() is
// `uri`. The object is opened and fetched through `transport` (tests pass a
// scripted one). Errors: as OpenRemoteObject() and ReadRange(); the cache
// directory's I/O errors (errno-mapped), naming the path.
absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenCachedShard(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

// Starts fetching remote `uri` into the cache in `options.cache_dir` (not
// empty) in the background and returns at once: a hint for the shards a
// loader reads next. Does nothing when the shard is already being fetched by
// this process. Background failures are dropped (the later open reports
// them).
void PrefetchCachedShard(const std::string& uri, const SourceOptions& options);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_CACHE_SHARD_CACHE_H_
