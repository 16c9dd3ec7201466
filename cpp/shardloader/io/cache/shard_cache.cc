#include "shardloader/io/cache/shard_cache.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "shardloader/internal/fork_safety.h"
#include "shardloader/internal/sha256.h"
#include "shardloader/io/local/local_random_access.h"
#include "shardloader/io/read_range.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

namespace fs = std::filesystem;

// What KEY.meta records about KEY.shard.
struct Meta {
  std::string uri;
  int64_t size = -1;
  std::string etag;
  std::string sha256;  // hex
};

// The lock files this process has open. A child forked meanwhile shares
// each one's open file description, and so its flock(2): the lock would
// outlive the parent's close() for as long as the child lives, and the
// child's own Loader would wait for it for ever. The child, which has none
// of the threads that hold them, closes its copies (ForkHandlers below).
absl::Mutex lock_files_mu(absl::kConstInit);
absl::flat_hash_set<int>& LockFiles() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_files_mu) {
  static auto* fds = new absl::flat_hash_set<int>;
  return *fds;
}

// Exclusive flock(2) on a lock file, held for the object's lifetime.
class FileLock {
 public:
  static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(const std::string& path) {
    int fd = -1;
    {
      // Opened and recorded under lock_files_mu: no fork in between.
      absl::MutexLock lock(&lock_files_mu);
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return WithContext(ErrnoToStatus(errno, "cannot open cache lock"), {.uri = path});
      LockFiles().insert(fd);
    }
    auto file_lock = std::unique_ptr<FileLock>(new FileLock(fd));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        return WithContext(ErrnoToStatus(errno, "cannot lock cache entry"), {.uri = path});
      }
    }
    return file_lock;
  }
  ~FileLock() {
    absl::MutexLock lock(&lock_files_mu);
    LockFiles().erase(fd_);
    ::close(fd_);  // closing releases the lock
  }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Cache files whose SHA-256 this process has checked ("path|sha256").
absl::Mutex verified_mu(absl::kConstInit);
absl::flat_hash_set<std::string>& Verified() ABSL_EXCLUSIVE_LOCKS_REQUIRED(verified_mu) {
  static auto* verified = new absl::flat_hash_set<std::string>;
  return *verified;
}

std::string KeyOf(const std::string& uri, const SourceOptions& options) {
  return Sha256Hex(absl::StrCat(uri, "\n", options.endpoint_url)).substr(0, 32);
}

std::optional<Meta> ReadMeta(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  // Valid JSON of other types (a damaged or foreign file) is a corrupt entry
  // like any other, refetched: value() would throw json::type_error.
  const auto string_or_absent = [&json](const char* key) {
    return !json.contains(key) || json[key].is_string();
  };
  if (!string_or_absent("uri") || !string_or_absent("etag") || !string_or_absent("sha256") ||
      (json.contains("size") && !json["size"].is_number_integer())) {
    return std::nullopt;
  }
  Meta meta;
  meta.uri = json.value("uri", "");
  meta.size = json.value("size", int64_t{-1});
  meta.etag = json.value("etag", "");
  meta.sha256 = json.value("sha256", "");
  return meta;
}

absl::StatusOr<std::string> HashFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return WithContext(ErrnoToStatus(errno, "cannot read cache file"), {.uri = path});
  Sha256Hasher hasher;
  std::vector<char> block(1 << 20);
  while (in.read(block.data(), block.size()) || in.gcount() > 0) {
    hasher.Update(absl::string_view(block.data(), in.gcount()));
  }
  return absl::BytesToHexString(hasher.Digest());
}

// Whether `base`.shard is a complete, unaltered copy of `object`.
bool IsValid(const std::string& base, const RemoteObject& object) {
  const std::optional<Meta> meta = ReadMeta(base + ".meta");
  std::error_code error;
  const auto size = fs::file_size(base + ".shard", error);
  if (!meta || error || meta->uri != object.uri() || meta->size != object.size() ||
      meta->etag != object.etag() || static_cast<int64_t>(size) != meta->size) {
    return false;
  }
  const std::string token = absl::StrCat(base, "|", meta->sha256);
  {
    absl::MutexLock lock(&verified_mu);
    if (Verified().contains(token)) return true;
  }
  const absl::StatusOr<std::string> digest = HashFile(base + ".shard");
  if (!digest.ok() || *digest != meta->sha256) return false;
  absl::MutexLock lock(&verified_mu);
  Verified().insert(token);
  return true;
}

// Deletes least recently used entries (never `keep`) until `need` more
// bytes fit under `limit`. Returns whether they fit. Holds the directory's
// lock, so concurrent evictions do not count the same space twice.
absl::StatusOr<bool> MakeRoom(const std::string& dir, const std::string& keep, int64_t need,
                              int64_t limit) {
  if (limit <= 0) return true;
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock,
                               FileLock::Acquire(dir + "/.evict.lock"));
  struct Entry {
    fs::file_time_type used;
    std::string base;
    int64_t size;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, error)) {
    const std::string name = file.path().filename().string();
    std::error_code stat_error;
    const int64_t size = static_cast<int64_t>(file.file_size(stat_error));
    if (stat_error) continue;
    if (absl::StrContains(name, ".shard.tmp-")) {
      total += size;  // another fetch in progress: counts, cannot be evicted
    } else if (absl::EndsWith(name, ".shard")) {
      total += size;
      const std::string base = file.path().string().substr(0, file.path().string().size() - 6);
      if (base != keep) entries.push_back({file.last_write_time(stat_error), base, size});
    }
  }
  if (error) return WithContext(ErrnoToStatus(error.value(), "cannot list cache"), {.uri = dir});
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& entry : entries) {
    if (total + need <= limit) break;
    fs::remove(entry.base + ".meta", error);
    fs::remove(entry.base + ".shard", error);
    total -= entry.size;
  }
  return total + need <= limit;
}

// Fetches `object` into `base`.shard (under a temporary name, then renamed)
// and writes its meta. The caller holds the entry's lock.
absl::Status Fetch(const std::string& base, const std::shared_ptr<RemoteObject>& object,
                   const SourceOptions& options) {
  const fs::path dir = fs::path(base).parent_path();
  const std::string stem = fs::path(base).filename().string() + ".shard.tmp-";
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, error)) {
    if (absl::StartsWith(file.path().filename().string(), stem)) fs::remove(file.path(), error);
  }
  fs::remove(base + ".meta", error);
  const std::string temp =
      absl::StrCat(base, ".shard.tmp-", ::getpid(), "-", std::random_device{}());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return WithContext(ErrnoToStatus(errno, "cannot create cache file"), {.uri = temp});
  std::unique_ptr<ByteSource> stream = ParallelStreamOf(object, options);
  Sha256Hasher hasher;
  std::vector<char> block(options.part_size_bytes);
  absl::Status status;
  while (status.ok()) {
    const absl::StatusOr<size_t> n = stream->Read(block.data(), block.size());
    if (!n.ok() || *n == 0) {
      status = n.status();
      break;
    }
    hasher.Update(absl::string_view(block.data(), *n));
    for (size_t done = 0; done < *n && status.ok();) {
      const ssize_t written = ::write(fd, block.data() + done, *n - done);
      if (written >= 0) {
        done += static_cast<size_t>(written);
      } else if (errno != EINTR) {
        status = WithContext(ErrnoToStatus(errno, "cannot write cache file"), {.uri = temp});
      }
    }
  }
  if (::close(fd) != 0 && status.ok()) {
    status = WithContext(ErrnoToStatus(errno, "cannot write cache file"), {.uri = temp});
  }
  if (status.ok() && ::rename(temp.c_str(), (base + ".shard").c_str()) != 0) {
    status = WithContext(ErrnoToStatus(errno, "cannot rename cache file"), {.uri = temp});
  }
  if (!status.ok()) {
    fs::remove(temp, error);
    return status;
  }
  const std::string sha256 = absl::BytesToHexString(hasher.Digest());
  const nlohmann::json meta = {{"uri", object->uri()},
                               {"size", object->size()},
                               {"etag", object->etag()},
                               {"sha256", sha256}};
  const std::string meta_temp = temp + ".meta";
  {
    std::ofstream out(meta_temp, std::ios::trunc);
    out << meta.dump();
    if (!out.flush()) {
      return WithContext(ErrnoToStatus(errno, "cannot write cache meta"), {.uri = meta_temp});
    }
  }
  if (::rename(meta_temp.c_str(), (base + ".meta").c_str()) != 0) {
    return WithContext(ErrnoToStatus(errno, "cannot rename cache meta"), {.uri = meta_temp});
  }
  absl::MutexLock lock(&verified_mu);
  Verified().insert(absl::StrCat(base, "|", sha256));
  return absl::OkStatus();
}

// A cached file that names the remote URI it stands for.
class CachedShard final : public RandomAccessSource {
 public:
  CachedShard(std::string uri, std::shared_ptr<RandomAccessSource> file)
      : uri_(std::move(uri)), file_(std::move(file)) {}
  const std::string& uri() const override { return uri_; }
  int64_t size() const override { return file_->size(); }
  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override {
    // Checked here, so a read past the end names the remote URI.
    SHARDLOADER_RETURN_IF_ERROR(CheckReadRange(uri_, offset, size, this->size()));
    return file_->ReadAt(offset, size, dst);
  }
  std::string_view mapped() const override { return file_->mapped(); }

 private:
  std::string uri_;
  std::shared_ptr<RandomAccessSource> file_;
};

// URIs this process is prefetching.
absl::Mutex prefetch_mu(absl::kConstInit);
absl::flat_hash_set<std::string>& Prefetching() ABSL_EXCLUSIVE_LOCKS_REQUIRED(prefetch_mu) {
  static auto* uris = new absl::flat_hash_set<std::string>;
  return *uris;
}

// fork(): no lock of this file is copied held, and the child starts with no
// lock files and no prefetches (their threads exist only in the parent).
void LockAllForFork() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  lock_files_mu.Lock();
  verified_mu.Lock();
  prefetch_mu.Lock();
}
void UnlockAllInParent() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  prefetch_mu.Unlock();
  verified_mu.Unlock();
  lock_files_mu.Unlock();
}
void ForgetInChild() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Prefetching().clear();
  for (int fd : LockFiles()) ::close(fd);
  LockFiles().clear();
  internal_fork::ResetMutexInChild(prefetch_mu);
  internal_fork::ResetMutexInChild(verified_mu);
  internal_fork::ResetMutexInChild(lock_files_mu);
}
[[maybe_unused]] const bool fork_handlers =
    pthread_atfork(&LockAllForFork, &UnlockAllInParent, &ForgetInChild) == 0;

}  // namespace

absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenCachedShard(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                               OpenRemoteObject(uri, options, std::move(transport)));
  const int64_t limit = options.cache_limit_bytes;
  if (limit > 0 && object->size() > limit) return RandomAccessOf(std::move(object));
  std::error_code error;
  fs::create_directories(options.cache_dir, error);
  if (error) {
    return WithContext(ErrnoToStatus(error.value(), "cannot create cache directory"),
                       {.uri = options.cache_dir});
  }
  const std::string base = absl::StrCat(options.cache_dir, "/", KeyOf(uri, options));
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, FileLock::Acquire(base + ".lock"));
  if (!IsValid(base, *object)) {
    SHARDLOADER_ASSIGN_OR_RETURN(const bool fits,
                                 MakeRoom(options.cache_dir, base, object->size(), limit));
    if (!fits) return RandomAccessOf(std::move(object));
    SHARDLOADER_RETURN_IF_ERROR(Fetch(base, object, options));
  }
  const std::string path = base + ".shard";
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> file,
                               OpenLocalRandomAccess(path, options));
  return std::make_shared<CachedShard>(uri, std::move(file));
}

void PrefetchCachedShard(const std::string& uri, const SourceOptions& options) {
  {
    absl::MutexLock lock(&prefetch_mu);
    if (!Prefetching().insert(uri).second) return;
  }
  std::thread([uri, options] {
    OpenCachedShard(uri, options).IgnoreError();
    absl::MutexLock lock(&prefetch_mu);
    Prefetching().erase(uri);
  }).detach();
}

}  // namespace shardloader
