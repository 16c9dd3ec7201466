// SourceOptions: how shards are opened and read, for every storage backend
// (local files, http(s)://, s3://, the local cache of remote shards).
//
// One struct from the Python `sl.SourceOptions` down to the backends: each
// backend reads the fields of its own section.
#ifndef SHARDLOADER_IO_SOURCE_OPTIONS_H_
#define SHARDLOADER_IO_SOURCE_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace shardloader {

struct SourceOptions {
  size_t block_size_bytes = size_t{1} << 20;  // read size for local files
  // Pipes and FIFOs opened for positional reads are held in memory whole;
  // longer ones are refused.
  int64_t max_unseekable_bytes = int64_t{1} << 30;
  // Regular local files opened for positional reads are memory-mapped
  // (read-only, shared), so samples reach the batch with one copy, or none
  // for decoded fields: the decoder reads the mapped bytes. As DALI's file
  // readers do (its `dont_use_mmap` turns this off). A file truncated in
  // place while mapped raises SIGBUS on the next read of a lost page;
  // shardloader's writers never do that (they write a new file and rename).
  // The mapped pages of open shards count in the process's RSS; they are
  // page cache, which the kernel reclaims under memory pressure.
  // False: pread(2) into memory instead. A file system that cannot map
  // falls back to pread by itself.
  bool memory_map = true;

  // --- Remote shards (http://, https://, s3://; io/remote/) ---
  // A shard is read as ranged GETs of `part_size_bytes`, up to
  // `max_concurrency` of them in flight per shard, reassembled in order.
  size_t part_size_bytes = size_t{8} << 20;
  int max_concurrency = 8;
  // Transient failures (connection errors, 5xx, 429, timeouts) are retried
  // up to `max_attempts` tries in all, with exponential backoff and jitter
  // starting at `initial_backoff` and capped at `max_backoff` (io/remote/retry.h).
  int max_attempts = 8;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
  absl::Duration connect_timeout = absl::Seconds(10);
  // A transfer slower than `low_speed_bytes_per_s` for `low_speed_time` is
  // dropped (and retried, resuming at the byte where it stopped).
  int64_t low_speed_bytes_per_s = 1024;
  absl::Duration low_speed_time = absl::Seconds(30);
  // A PEM file of the CA certificates that https:// servers (and S3
  // endpoints) are verified against; empty: libcurl's default trust store.
  // Certificates are always verified: a server the store does not vouch for
  // is refused (PermissionDenied); an unreadable file is InvalidArgument.
  std::string ca_bundle;

  // --- S3 (io/remote/s3_client.h). Credentials are never options: they come from
  // AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or the
  // shared credentials file (io/remote/aws_credentials.h). ---
  // An S3-compatible endpoint ("http://127.0.0.1:9000"); empty: the
  // AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL variable, else AWS
  // (https://s3.<region>.amazonaws.com). A custom endpoint is addressed
  // path-style (endpoint/bucket/key).
  std::string endpoint_url;
  std::string region;      // empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1
  std::string profile;     // empty: AWS_PROFILE, else "default"
  bool anonymous = false;  // unsigned requests (public buckets)

  // --- Local cache of remote shards (io/cache/shard_cache.h) ---
  // Empty: no cache; shards are read from the network each time.
  std::string cache_dir;
  // Bytes the cache may hold (0: no limit). Least recently used shards are
  // evicted; a shard larger than the limit is read uncached.
  int64_t cache_limit_bytes = 0;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_SOURCE_OPTIONS_H_
